/*
 * help.c: `shardlab help` (and --help): every row of the subcommand table
 * with its usage and what it does; `shardlab help SUBCOMMAND` and
 * `shardlab SUBCOMMAND --help`: its usage and every option it takes, from
 * the option table (options.c).
 */
#include "cli.h"

/* Where the help of an option starts, and the width it wraps at. */
#define HELP_COL 28
#define HELP_WIDTH 79

/*
 * Prints text from column col, wrapped at HELP_WIDTH columns with
 * continuation lines starting at HELP_COL, then a newline.
 */
static void
help_wrap(FILE *fp, int col, const char *text)
{
	const char *p = text;

	while (*p != '\0') {
		size_t w = strcspn(p, " ");
		char word[512];
		int ww;

		snprintf(word, sizeof word, "%.*s", (int)w, p);
		ww = cli_text_width(word);
		if (col > HELP_COL && col + 1 + ww > HELP_WIDTH) {
			fprintf(fp, "\n%*s", HELP_COL, "");
			col = HELP_COL;
		} else if (col > HELP_COL) {
			fputc(' ', fp);
			col++;
		}
		fputs(word, fp);
		col += ww;
		p += w;
		p += strspn(p, " ");
	}
	fputc('\n', fp);
}

/* "  -o, --output FILE" of one option. */
static void
help_option(FILE *fp, const struct cli_option *r)
{
	char spec[160];
	const char *value = r->arg == CLI_FLAG ? NULL :
	    r->arg == CLI_CHOICE ? r->choices : _(r->metavar);
	int w;

	if (r->short_name != 0)
		snprintf(spec, sizeof spec, "  -%c, --%s%s%s", r->short_name,
		    r->name, value ? " " : "", value ? value : "");
	else
		snprintf(spec, sizeof spec, "  --%s%s%s", r->name, value ? " " : "",
		    value ? value : "");
	fputs(spec, fp);
	w = cli_text_width(spec);
	if (w + 2 > HELP_COL) {
		fprintf(fp, "\n%*s", HELP_COL, "");
		w = HELP_COL;
	} else {
		fprintf(fp, "%*s", HELP_COL - w, "");
		w = HELP_COL;
	}
	help_wrap(fp, w, _(r->help));
	if (r->more_help != NULL)
		r->more_help(fp);
}

void
cli_help_command(FILE *fp, const struct cli_cmd *cmd, int argc, char **argv)
{
	fprintf(fp, _("usage: shardlab %s\n"), _(cmd->usage));
	fprintf(fp, "%s\n\n%s\n", _(cmd->help), _("options:"));
	for (size_t i = 0; i < cli_n_options; i++)
		if ((cli_options[i].cmds & cmd->bit) != 0)
			help_option(fp, &cli_options[i]);
	if (cmd->more_help != NULL)
		cmd->more_help(fp, argc, argv);
	fprintf(fp, "\n%s\n", _("See shardlab(1)."));
}

int
cli_unknown_command(const char *word)
{
	const char *names[32], *near;
	size_t n = 0;

	for (size_t i = 0; i < cli_n_cmds && n < SL_ARRAY_LEN(names); i++)
		names[n++] = cli_cmds[i]->name;
	near = cli_nearest(word, names, n);
	if (near != NULL)
		fprintf(stderr, _("shardlab: unknown subcommand '%s': did you mean '%s'? (see shardlab --help)\n"),
		    sl_esc(word), near);
	else
		fprintf(stderr, _("shardlab: unknown subcommand '%s' (see shardlab --help)\n"),
		    sl_esc(word));
	return SL_EINPUT;
}

static int
cmd_help(int argc, char **argv)
{
	if (argc > 2) {
		fprintf(stderr, _("shardlab: usage: shardlab help [SUBCOMMAND]\n"));
		return SL_EINPUT;
	}
	if (argc == 2) {
		for (size_t i = 0; i < cli_n_cmds; i++)
			if (strcmp(argv[1], cli_cmds[i]->name) == 0) {
				cli_help_command(stdout, cli_cmds[i], 0, NULL);
				return SL_OK;
			}
		return cli_unknown_command(argv[1]);
	}
	printf(_("usage: shardlab [SUBCOMMAND] [ARGUMENTS]\n\n"));
	for (size_t i = 0; i < cli_n_cmds; i++)
		printf("  shardlab %s\n      %s\n", _(cli_cmds[i]->usage),
		    _(cli_cmds[i]->help));
	printf(_("\nshardlab SUBCOMMAND --help lists the options a subcommand takes.\n"
	    "MODEL:   a bundled model name, a model JSON file, or an IOPDDL problem (.json, .json.gz)\n"
	    "exit status: 0 success, 1 no feasible plan, 2 bad usage or input, 3 internal or solver failure\n"
	    "See shardlab(1), shardlab-model(5) and shardlab-plan(5).\n"));
	return SL_OK;
}

const struct cli_cmd cli_cmd_help = {
	.name = "help",
	.bit = CLI_C_HELP,
	.usage = N_("help [SUBCOMMAND]"),
	.help = N_("this text, or the options of a subcommand"),
	.run = cmd_help,
};
