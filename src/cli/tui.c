/*
 * tui.c: `shardlab tui`, also what shardlab runs without a subcommand or
 * with a model file or an option first: the curses explorer (ui/), reached
 * through its one entry point.
 */
#include "cli.h"
#include "explorer.h"

const struct cli_cmd cli_cmd_tui = {
	.name = "tui",
	.bit = CLI_C_TUI,
	.usage = N_("tui [MODEL] [OPTIONS] [--plan FILE]"),
	.help = N_("open the explorer (the default without a subcommand)"),
	.run = ui_main,
};
