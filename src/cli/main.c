/*
 * main.c: the command line's table of subcommands and its dispatch.  Each
 * subcommand is a file of this directory exporting its row (name, bit,
 * usage, help, the function that runs it); a new subcommand is a new file,
 * a line here and its bit (cli.h), which the option table's rows name.
 */
#include "cli.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <unistd.h>

/* In the order of shardlab --help.  No subcommand, or a model file or an
 * option in its place, opens the explorer (tui). */
const struct cli_cmd *const cli_cmds[] = {
	&cli_cmd_tui,
	&cli_cmd_solve,
	&cli_cmd_sweep,
	&cli_cmd_compare,
	&cli_cmd_explain,
	&cli_cmd_show,
	&cli_cmd_gen,
	&cli_cmd_render,
	&cli_cmd_timeline,
	&cli_cmd_validate,
	&cli_cmd_profile,
	&cli_cmd_plan,
	&cli_cmd_help,
};
const size_t cli_n_cmds = SL_ARRAY_LEN(cli_cmds);

/*
 * Standard output is checked once, after the command: a full disk or a closed
 * pipe is a failed command (status 3), never a silent truncation.
 */
static int
cli_finish(int rc)
{
	bool bad = fflush(stdout) != 0 || ferror(stdout);
	int e = errno;

	if (fclose(stdout) != 0 && !bad) {
		bad = true;
		e = errno;
	}
	if (bad) {
		fprintf(stderr, _("shardlab: cannot write to standard output: %s\n"),
		    strerror(e ? e : EIO));
		return SL_EINTERNAL;
	}
	return rc;
}

static int
cli_dispatch(int argc, char **argv)
{
	if (argc < 2)
		return cli_cmd_tui.run(0, NULL);
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cli_cmd_help.run(0, NULL);
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		printf("shardlab %s\n", PACKAGE_VERSION);
		return SL_OK;
	}
	for (size_t i = 0; i < cli_n_cmds; i++)
		if (strcmp(argv[1], cli_cmds[i]->name) == 0) {
			if (cli_help_asked(argc - 1, argv + 1)) {
				cli_help_command(stdout, cli_cmds[i], argc - 1, argv + 1);
				return SL_OK;
			}
			return cli_cmds[i]->run(argc - 1, argv + 1);
		}
	if (argv[1][0] == '-' || access(argv[1], R_OK) == 0) {
		if (cli_help_asked(argc, argv)) {
			cli_help_command(stdout, &cli_cmd_tui, argc, argv);
			return SL_OK;
		}
		return cli_cmd_tui.run(argc, argv);
	}
	return cli_unknown_command(argv[1]);
}

/* A signal while a file is written: remove the temporary file, then die. */
static void
cli_on_signal(int sig)
{
	sl_atomic_unlink_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

int
main(int argc, char **argv)
{
	int sigs[CLI_MAX_EXIT_SIGNALS], n_sigs;
	const char *bad;
	char buf[128];

	sl_tune_allocator();
	/* no file this process read is replaced by one it writes */
	sl_inputs_guard(true);
	n_sigs = cli_exit_signals(sigs, CLI_MAX_EXIT_SIGNALS);
	for (int i = 0; i < n_sigs; i++) {
		struct sigaction sa, old;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = cli_on_signal;
		sigemptyset(&sa.sa_mask);
		/* an ignored signal stays ignored (nohup), and one handled
		 * already (a fuzzer's timer) stays with its handler */
		if (sigaction(sigs[i], NULL, &old) == 0 &&
		    old.sa_handler == SIG_DFL && !(old.sa_flags & SA_SIGINFO))
			sigaction(sigs[i], &sa, NULL);
	}
	setlocale(LC_ALL, "");
#ifdef ENABLE_NLS
	bindtextdomain(PACKAGE, sl_localedir());
	textdomain(PACKAGE);
#endif
	/* an inconsistent table is a defect: every run says so */
	if ((bad = cli_tables_check(buf, sizeof buf)) != NULL) {
		fprintf(stderr, "shardlab: internal error: %s\n", bad);
		return 3;
	}
	return cli_finish(cli_dispatch(argc, argv));
}
