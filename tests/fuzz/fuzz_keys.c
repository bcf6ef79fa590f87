/*
 * fuzz_keys.c: libFuzzer target for the explorer's state machine: each
 * input byte is a key (bytes 0x80 and up pick the arrow, page and function
 * keys) handed to ui_handle_event on mlp-2layer over 4 devices, with no
 * terminal: the windows are absent, so nothing is drawn, and the exports
 * and the GPU runner are pointed where they cannot act.
 */
#include "fuzz_common.h"
#include "ui.h"

#include <stdlib.h>
#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int fn_keys[] = { KEY_UP, KEY_DOWN, KEY_LEFT, KEY_RIGHT,
	    KEY_NPAGE, KEY_PPAGE, KEY_HOME, KEY_END, KEY_BACKSPACE, KEY_ENTER,
	    KEY_RESIZE, KEY_F(1), KEY_DC };
	static char *args[1] = { (char *)"mlp-2layer" };
	cli_opts o;
	cli_session s;
	sl_error err;
	ui u;

	if (size > 256)
		return 0;
	setenv("SHARDLAB_RUNNER", "/nonexistent/shardlab-runner", 1);
	memset(&o, 0, sizeof o);
	o.n_axes = 1;
	o.shape[0] = 4;
	o.hw = "h100-nvlink";
	o.solver = SL_SOLVER_AUTO;
	o.mem_limit = -1;
	o.micro_batch = 1;
	o.args = args;
	o.n_args = 1;
	sl_error_clear(&err);
	if (cli_open(&o, false, &s, &err) != SL_OK) {
		fprintf(stderr, "fuzz_keys: %s\n", err.msg);
		abort();
	}
	memset(&u, 0, sizeof u);
	if (ui_init(&u, &s, &o, &err) == SL_OK) {
		for (size_t i = 0; i < size; i++) {
			struct ui_event ev = { data[i], false };
			if (data[i] >= 0x80) {
				ev.key = fn_keys[data[i] % (sizeof fn_keys /
				    sizeof *fn_keys)];
				ev.fn = true;
			}
			/* no export to a file, no validation run */
			if (!ev.fn && (ev.key == 'e' || ev.key == 'E' ||
			    ev.key == 'v' || ev.key == 's' || ev.key == 'q'))
				continue;
			ui_handle_event(&u, ev);
		}
	}
	ui_free(&u);
	cli_close(&s);
	cli_opts_free(&o);
	return 0;
}
