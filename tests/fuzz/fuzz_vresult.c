/*
 * fuzz_vresult.c: libFuzzer target for the GPU runner's result JSON, read
 * for a plan of 4 devices and printed as `shardlab validate` prints it.
 */
#include "fuzz_common.h"
#include "cli.h"

#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof path);
	sl_mem pred[4];
	int64_t pred_ns[4] = { 1, 2, 3, 4 };
	cli_vresult res;
	sl_error err;

	if (fd < 0)
		return 0;
	memset(pred, 0, sizeof pred);
	memset(&res, 0, sizeof res);
	sl_error_clear(&err);
	if (cli_vresult_read(path, 4, pred, pred_ns, &res, &err) == SL_OK) {
		for (int d = 0; d < res.n_devices; d++)
			(void)cli_validate_error(sl_mem_total(&res.dev[d].measured),
			    res.dev[d].meminfo_delta);
		cli_vresult_free(&res);
	}
	close(fd);
	return 0;
}
