/*
 * fuzz_cli.c: libFuzzer target for the command line's parsing: the input is
 * a subcommand (its first byte picks a row of the table) and arguments, one
 * per line, through cli_parse (options, numbers, sizes, meshes, pins and the
 * options each row takes), and each line also through the engine's
 * parsers of meshes, sizes, numbers and OP=STRATEGY, and the name escaper.
 */
#include "fuzz_common.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *argv[66];
	int argc = 0;
	cli_opts o;
	sl_error err;

	if (size == 0 || size > 4096)
		return 0;
	buf = malloc(size);
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	argv[argc++] = (char *)cli_cmds[data[0] % cli_n_cmds]->name;
	for (char *p = buf, *nl; argc < 64; p = nl + 1) {
		int n_axes, shape[SL_MAX_AXES];
		sl_constraints cs = { 0 };
		double d;

		if ((nl = strchr(p, '\n')) != NULL)
			*nl = '\0';
		argv[argc++] = p;
		sl_error_clear(&err);
		(void)sl_mesh_parse(p, &n_axes, shape, &err);
		(void)sl_parse_size(p);
		(void)sl_parse_number(p, &d);
		sl_error_clear(&err);
		(void)sl_constraints_parse(&cs, p, true, &err);
		sl_constraints_free(&cs);
		(void)sl_esc(p);
		if (nl == NULL)
			break;
	}
	argv[argc] = NULL;
	sl_error_clear(&err);
	if (cli_parse(argc, argv, &o, &err) == SL_OK)
		cli_opts_free(&o);
	free(buf);
	return 0;
}
