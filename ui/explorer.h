/*
 * explorer.h: the explorer's one public entry point, for the command line's
 * `tui` row (src/cli/tui.c).  Nothing of curses or of the explorer's state
 * is visible here.
 */
#ifndef SL_EXPLORER_H
#define SL_EXPLORER_H

/* Opens the explorer on the model and options of argv (argv[0] the
 * subcommand or the program; argv NULL: the default model) and runs it
 * until the user quits; returns the exit status. */
int ui_main(int argc, char **argv);

#endif
