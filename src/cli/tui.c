/*
 * tui.c: `shardlab tui`, also what shardlab runs without a subcommand or
 * with a model file or an option first: the curses explorer (ui/), reached
 * through its one entry point.
 */
#include "cli.h"
#include "explorer.h"

const struct cli_cmd cli_cmd_tui = {
	"tui",
	N_("tui [MODEL] [OPTIONS] [--plan FILE]"),
	N_("open the explorer (the default without a subcommand)"),
	CLI_O_MESH " hw alpha " CLI_O_SOLVE " " CLI_O_RECIPE
	    " time-limit threads no-zero plan",
	ui_main
};
