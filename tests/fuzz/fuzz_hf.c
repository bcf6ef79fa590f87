/*
 * fuzz_hf.c: libFuzzer target for Hugging Face config.json files: read into
 * a generator configuration, and when that succeeds with a small model,
 * generated and validated.
 */
#include "fuzz_common.h"
#include "shardlab.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof path);
	sl_gen_config c;
	sl_error err;
	sl_graph *g;

	if (fd < 0)
		return 0;
	sl_error_clear(&err);
	if (sl_gen_from_hf_config(path, &c, &err) == SL_OK && c.layers <= 4 &&
	    c.hidden <= 4096 && c.vocab <= 65536 && c.seq <= 4096 &&
	    c.ffn <= 16384) {
		sl_error_clear(&err);
		if ((g = sl_gen(&c, &err)) != NULL)
			sl_graph_free(g);
	}
	close(fd);
	return 0;
}
