/*
 * gen.c: `shardlab gen`, a model file for a transformer family from flags
 * or a Hugging Face config.
 */
#include "cli.h"

/* shardlab gen FAMILY --help: the flags with the family's defaults. */
static int
gen_help(const char *family)
{
	int fam = family ? sl_family_from_name(family) : -1;

	printf("%s\n", _("usage: shardlab gen gpt|bert|llama|moe [FLAGS] [--hf-config FILE] [-o FILE]"));
	for (int f = 0; f < SL_FAM_COUNT; f++) {
		sl_gen_config c;
		if (fam >= 0 && f != fam)
			continue;
		sl_gen_family_defaults((sl_family)f, &c);
		printf(_("\n%s (defaults of %s):\n"), sl_family_name((sl_family)f),
		    c.name);
		printf(_("  --layers N      transformer layers (%d)\n"), c.layers);
		printf(_("  --hidden H      hidden size (%lld)\n"), (long long)c.hidden);
		printf(_("  --heads A       attention heads (%lld)\n"), (long long)c.heads);
		printf(_("  --kv-heads K    key/value heads (grouped-query attention; llama only; default: heads)\n"));
		printf(_("  --ffn F         feed-forward size (default %s)\n"),
		    f == SL_FAM_LLAMA ? _("2/3 x 4 x hidden rounded up to a multiple of 256") :
		    f == SL_FAM_MOE ? "14336" : _("4 x hidden"));
		printf(_("  --vocab V       vocabulary (%lld)\n"), (long long)c.vocab);
		printf(_("  --seq S         training sequence length (%lld; a --hf-config trains at min(max_position_embeddings, %d))\n"),
		    (long long)c.seq, SL_HF_MAX_SEQ);
	}
	printf("\n%s\n", _("  --batch B       fix the graph's batch (default: micro-batch x devices, set when the model is opened)\n"
	    "  --name NAME     model name (default: FAMILY-LAYERSxHIDDEN, or the config's name)\n"
	    "  --hf-config F   read the sizes from a Hugging Face config.json of the same family\n"
	    "  -o FILE         write the model there (default: standard output)"));
	return fflush(stdout) == 0 && !ferror(stdout) ? SL_OK : SL_EINTERNAL;
}

static int
cmd_gen(int argc, char **argv)
{
	cli_opts o;
	sl_gen_config c;
	sl_graph *g;
	sl_error err;
	int fam, rc;

	sl_error_clear(&err);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return gen_help(argc > 1 && argv[1][0] != '-' ? argv[1] : NULL);
	if (cli_parse(argc, argv, &o, &err) != SL_OK)
		return cli_report(&err);
	if (o.n_args != 1 || (fam = sl_family_from_name(o.args[0])) < 0) {
		sl_error_set(&err, SL_EINPUT, NULL, 0, 0,
		    _("usage: shardlab gen gpt|bert|llama|moe [--layers N] [--hidden H] [--heads A] [--kv-heads K] [--ffn F] [--vocab V] [--seq S] [--batch B] [--name NAME] [--hf-config FILE] [-o FILE] (shardlab gen FAMILY --help lists the defaults)"));
		cli_opts_free(&o);
		return cli_report(&err);
	}
	sl_gen_family_defaults(fam, &c);
	if (o.hf_config != NULL) {
		if (sl_gen_from_hf_config(o.hf_config, &c, &err) != SL_OK) {
			cli_opts_free(&o);
			return cli_report(&err);
		}
		if ((int)c.family != fam) {
			sl_error_set(&err, SL_EINPUT, o.hf_config, 0, 0,
			    _("this config describes a %s-family model, not %s: use "
			    "shardlab gen %s --hf-config %s"), sl_family_name(c.family),
			    sl_family_name(fam), sl_family_name(c.family), o.hf_config);
			cli_opts_free(&o);
			return cli_report(&err);
		}
	}
	if (o.layers) c.layers = o.layers;
	if (o.hidden) c.hidden = o.hidden;
	if (o.heads) {
		/* kv_heads follows heads unless given (or read from a config) */
		if (c.kv_heads == c.heads || c.kv_heads <= 0)
			c.kv_heads = o.heads;
		c.heads = o.heads;
	}
	if (o.kv_heads) c.kv_heads = o.kv_heads;
	if (o.ffn) c.ffn = o.ffn;
	if (o.vocab) c.vocab = o.vocab;
	if (o.seq) {
		c.seq = o.seq;
		c.max_positions = 0;
	}
	if (o.batch) c.batch = o.batch;
	if (o.name)
		snprintf(c.name, sizeof c.name, "%s", o.name);
	else if (o.hf_config == NULL)
		snprintf(c.name, sizeof c.name, "%s-%dx%lld", o.args[0], c.layers,
		    (long long)c.hidden);
	g = sl_gen(&c, &err);
	if (g == NULL) {
		/* sizes from a config: the error is about that file */
		if (o.hf_config != NULL && err.file[0] == '\0')
			snprintf(err.file, sizeof err.file, "%s", o.hf_config);
		cli_opts_free(&o);
		return cli_report(&err);
	}
	/* Without --batch the file describes the generator, so its batch
	 * follows --micro-batch and the devices like the bundled models'. */
	if (o.batch)
		rc = sl_model_save_json(g, o.output ? o.output : "-", &err);
	else
		rc = sl_gen_save(&c, o.output ? o.output : "-", &err);
	if (rc != SL_OK) {
		rc = cli_report(&err);
	} else if (!o.quiet) {
		if (c.max_positions > 0)
			fprintf(stderr, _("shardlab: training sequence %lld: the config "
			    "allows %lld positions, capped at %d (--seq to change)\n"),
			    (long long)c.seq, (long long)c.max_positions, SL_HF_MAX_SEQ);
		if (o.output != NULL)
			fprintf(stderr, _("shardlab: wrote %s: %s, %d operators, %.3f B "
			    "parameters, sequence %lld\n"), o.output, c.name, g->n_ops,
			    (double)sl_graph_param_count(g) / 1e9, (long long)c.seq);
	}
	sl_graph_free(g);
	cli_opts_free(&o);
	return rc;
}

const struct cli_cmd cli_cmd_gen = {
	"gen",
	N_("gen gpt|bert|llama|moe [FLAGS] [--hf-config FILE] [-o FILE]"),
	N_("write a model file for a transformer family"),
	CLI_O_RECIPE " hf-config layers hidden heads kv-heads ffn vocab batch name"
	    " output quiet",
	cmd_gen
};
