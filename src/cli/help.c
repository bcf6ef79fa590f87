/*
 * help.c: `shardlab help` (and --help): every row of the subcommand table
 * with its usage and what it does, then the options they share.
 */
#include "cli.h"

static int
cmd_help(int argc, char **argv)
{
	printf(_("usage: shardlab [SUBCOMMAND] [ARGUMENTS]\n\n"));
	for (size_t i = 0; i < cli_n_cmds; i++)
		printf("  shardlab %s\n      %s\n", _(cli_cmds[i]->usage),
		    _(cli_cmds[i]->help));
	printf(_("\nOPTIONS: --mesh AxB | --devices N, --hw PROFILE, --alpha A (bytes per microsecond),\n"
	    "         --pin OP=STRATEGY, --forbid OP=STRATEGY (repeatable), --solver auto|dp|ilp|brute|anytime,\n"
	    "         --mem-limit SIZE, --time-limit SECONDS, --threads N, --no-zero\n"
	    "RECIPE:  --attention flash|naive, --precision bf16|megatron|amp|fp32,\n"
	    "         --recompute none|selective|full|auto, --micro-batch B, --global-batch B, --seq S\n"
	    "MODEL:   a bundled model name, a model JSON file, or an IOPDDL problem (.json, .json.gz)\n"
	    "exit status: 0 success, 1 no feasible plan, 2 bad usage or input, 3 internal or solver failure\n"
	    "See shardlab(1), shardlab-model(5) and shardlab-plan(5).\n"));
	return SL_OK;
}

const struct cli_cmd cli_cmd_help = {
	"help",
	N_("help"),
	N_("this text"),
	"",
	cmd_help
};
