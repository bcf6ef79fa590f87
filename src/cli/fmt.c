/*
 * fmt.c: tables on the command line that keep their columns in any
 * language.  printf pads %-16s to 16 bytes, which is 8 to 11 columns of
 * Chinese; cli_fprintf pads to display columns instead.  Also the lines
 * every plan prints about its step time, the short forms of sizes, times
 * and meshes the subcommands print, and the engine's settings in the
 * command line's words (its options).
 */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <wchar.h>

/* Display columns of a UTF-8 string (bytes when it is not valid UTF-8). */
static int
cli_width(const char *s)
{
	mbstate_t st;
	const char *p = s;
	int w = 0;

	memset(&st, 0, sizeof st);
	while (*p != '\0') {
		wchar_t wc;
		size_t n = mbrtowc(&wc, p, MB_CUR_MAX, &st);
		int cw;

		if (n == (size_t)-1 || n == (size_t)-2) {
			memset(&st, 0, sizeof st);
			w++;
			p++;
			continue;
		}
		cw = wcwidth(wc);
		w += cw > 0 ? cw : 0;
		p += n;
	}
	return w;
}

int
cli_wc_width(wchar_t c)
{
	int w = wcwidth(c);
	return w < 0 ? 1 : w;
}

int
cli_text_width(const char *s)
{
	mbstate_t st;
	wchar_t c;
	size_t r;
	int w = 0;

	memset(&st, 0, sizeof st);
	while (*s != '\0') {
		r = mbrtowc(&c, s, MB_CUR_MAX, &st);
		if (r == (size_t)-1 || r == (size_t)-2) {
			memset(&st, 0, sizeof st);
			r = 1;
			c = '?';
		}
		w += cli_wc_width(c);
		s += r;
	}
	return w;
}

/*
 * fprintf in which the width of a %s counts display columns, not bytes, so
 * that tables keep their columns in translations with wide characters.
 * Other conversions (d, i, u, f, g, e, x, c with flags, width, precision
 * and the length modifiers l, ll, z) are formatted as fprintf would.
 */
int
cli_fprintf(FILE *fp, const char *fmt, ...)
{
	va_list ap;
	const char *p = fmt;
	int total = 0;

	va_start(ap, fmt);
	while (*p != '\0') {
		char spec[32], buf[128];
		const char *start;
		size_t k;
		bool left = false;
		int width = 0;
		enum { L_NONE, L_LONG, L_LLONG, L_SIZE } len = L_NONE;

		if (*p != '%') {
			fputc(*p++, fp);
			total++;
			continue;
		}
		if (p[1] == '%') {
			fputc('%', fp);
			total++;
			p += 2;
			continue;
		}
		start = p++;
		while (*p != '\0' && strchr("-+ #0", *p) != NULL)
			left |= *p++ == '-';
		while (*p >= '0' && *p <= '9')
			width = width * 10 + (*p++ - '0');
		if (*p == '.')
			for (p++; *p >= '0' && *p <= '9'; p++)
				;
		if (*p == 'l' && p[1] == 'l') {
			len = L_LLONG;
			p += 2;
		} else if (*p == 'l') {
			len = L_LONG;
			p++;
		} else if (*p == 'z') {
			len = L_SIZE;
			p++;
		}
		k = (size_t)(p - start) + 1;
		if (*p == '\0' || k >= sizeof spec)
			break;
		memcpy(spec, start, k);
		spec[k] = '\0';
		switch (*p++) {
		case 's': {
			const char *str = va_arg(ap, const char *);
			int pad = width - cli_width(str);

			if (!left)
				for (; pad > 0; pad--, total++)
					fputc(' ', fp);
			total += fprintf(fp, "%s", str);
			for (; pad > 0; pad--, total++)
				fputc(' ', fp);
			continue;
		}
		case 'd': case 'i': case 'c':
			if (len == L_LLONG)
				snprintf(buf, sizeof buf, spec, va_arg(ap, long long));
			else if (len == L_LONG)
				snprintf(buf, sizeof buf, spec, va_arg(ap, long));
			else if (len == L_SIZE)
				snprintf(buf, sizeof buf, spec, va_arg(ap, ssize_t));
			else
				snprintf(buf, sizeof buf, spec, va_arg(ap, int));
			break;
		case 'u': case 'x': case 'X':
			if (len == L_LLONG)
				snprintf(buf, sizeof buf, spec,
				    va_arg(ap, unsigned long long));
			else if (len == L_LONG)
				snprintf(buf, sizeof buf, spec, va_arg(ap, unsigned long));
			else if (len == L_SIZE)
				snprintf(buf, sizeof buf, spec, va_arg(ap, size_t));
			else
				snprintf(buf, sizeof buf, spec, va_arg(ap, unsigned));
			break;
		case 'f': case 'g': case 'e': case 'F': case 'G': case 'E':
			snprintf(buf, sizeof buf, spec, va_arg(ap, double));
			break;
		default:
			/* not supported: print the conversion as it stands */
			snprintf(buf, sizeof buf, "%s", spec);
			break;
		}
		total += fprintf(fp, "%s", buf);
	}
	va_end(ap);
	return total;
}

void
cli_print_step(FILE *fp, const sl_eval *ev)
{
	char b[5][32];

	if (ev->accum_steps > 1 && ev->exposed_accum_ns != ev->exposed_comm_ns)
		fprintf(fp, _("step time: %s = %lld micro-steps x (compute %s + "
		    "exposed communication %s, %s in the last) + optimizer %s\n"),
		    sl_format_ns(ev->step_ns, b[0], sizeof b[0]),
		    (long long)ev->accum_steps,
		    sl_format_ns(ev->compute_ns, b[1], sizeof b[1]),
		    sl_format_ns(ev->exposed_accum_ns, b[2], sizeof b[2]),
		    sl_format_ns(ev->exposed_comm_ns, b[3], sizeof b[3]),
		    sl_format_ns(ev->optim_ns, b[4], sizeof b[4]));
	else
		fprintf(fp, ngettext("step time: %s = %lld micro-step x (compute %s + "
		    "exposed communication %s) + optimizer %s\n", "step time: %s = "
		    "%lld micro-steps x (compute %s + exposed communication %s) + "
		    "optimizer %s\n", ev->accum_steps),
		    sl_format_ns(ev->step_ns, b[0], sizeof b[0]),
		    (long long)ev->accum_steps,
		    sl_format_ns(ev->compute_ns, b[1], sizeof b[1]),
		    sl_format_ns(ev->exposed_comm_ns, b[2], sizeof b[2]),
		    sl_format_ns(ev->optim_ns, b[4], sizeof b[4]));
	fprintf(fp, _("throughput: %s tokens/s, MFU %.1f%%"),
	    sl_format_rate(ev->tokens_per_s, b[0], sizeof b[0]),
	    100 * ev->mfu);
	/* recomputed forward passes are work the hardware does, not the model */
	if (ev->hw_flops > ev->model_flops)
		fprintf(fp, _(", HFU %.1f%% (with the recomputed forward passes)"),
		    100 * ev->hfu);
	fprintf(fp, "\n");
}

const char *
cli_bytes(int64_t v, char *buf)
{
	return sl_format_bytes(v, buf, 32);
}

const char *
cli_ns(int64_t v, char *buf)
{
	return sl_format_ns(v, buf, 32);
}

void
cli_print_mesh(const sl_mesh *m)
{
	if (m->n_axes == 1)
		printf("%d", m->axes[0].size);
	else
		printf("%dx%d", m->axes[0].size, m->axes[1].size);
}

/* Each setting's option, and how an error is mended with it (%s: the value
 * the engine names; NULL: the option and the value). */
static const struct {
	const char *opt;
	const char *fix;
} cli_settings[SL_SET_COUNT] = {
	[SL_SET_MESH] = { "--mesh", N_("use --mesh %s") },
	[SL_SET_AXES] = { "--axes", N_("give them with --axes, e.g. pp,dp,tp") },
	[SL_SET_HW] = { "--hw", N_("name one with --hw") },
	[SL_SET_PIN] = { "--pin", NULL },
	[SL_SET_FORBID] = { "--forbid", NULL },
	[SL_SET_SOLVER] = { "--solver", N_("use --solver %s") },
	[SL_SET_MEM_LIMIT] = { "--mem-limit", N_("give one with --mem-limit") },
	[SL_SET_RECOMPUTE] = { "--recompute", NULL },
	[SL_SET_PP] = { "--pp", NULL },
	[SL_SET_PLAN] = { "--plan", N_("open it with shardlab tui MODEL --plan FILE, "
	    "or write a whole-model plan with shardlab solve MODEL --json FILE") },
};

const char *
cli_setting_option(sl_setting s)
{
	return (unsigned)s < SL_SET_COUNT && cli_settings[s].opt != NULL ?
	    cli_settings[s].opt : "";
}

const char *
cli_error_words(const sl_error *err, char *buf, size_t len)
{
	const char *m = err->msg, *name = sl_setting_name(err->about);
	size_t n = strlen(name), o;
	sl_setting f = err->fix;

	if (*cli_setting_option(err->about) != '\0' && n > 0 &&
	    strncmp(m, name, n) == 0 && m[n] == ' ')
		o = (size_t)snprintf(buf, len, "%s%s", cli_setting_option(err->about),
		    m + n);
	else
		o = (size_t)snprintf(buf, len, "%s", m);
	if (*cli_setting_option(f) == '\0' || o >= len)
		return buf;
	if (cli_settings[f].fix != NULL) {
		char adv[512];
		/* the advice takes the value where it has a %s */
		snprintf(adv, sizeof adv, _(cli_settings[f].fix), err->fix_value);
		snprintf(buf + o, len - o, " (%s)", adv);
	} else if (err->fix_value[0] != '\0')
		snprintf(buf + o, len - o, " (%s %s)", cli_settings[f].opt,
		    err->fix_value);
	else
		snprintf(buf + o, len - o, " (%s)", cli_settings[f].opt);
	return buf;
}

/* A change in the command line's words: the option it sets, or drops. */
static void
change_words(const sl_fit_change *c, char *buf, size_t len)
{
	if (c->setting == SL_SET_NONE)
		snprintf(buf, len, "%s", c->what);
	else if (c->value[0] != '\0')
		snprintf(buf, len, "%s (%s %s)", c->what,
		    cli_setting_option(c->setting), c->value);
	else
		snprintf(buf, len, _("%s (drop %s)"), c->what,
		    cli_setting_option(c->setting));
}

void
cli_print_changes(FILE *fp, const sl_fit_change *ch, int n)
{
	int fit = 0, known = 0;
	char b[2][32], what[256];

	for (int i = 0; i < n; i++) {
		fit += ch[i].fits;
		known += ch[i].why[0] == '\0';
	}
	fprintf(fp, "\n%s\n", fit > 0 ? _("changes that would make it fit, best first:") :
	    known > 0 ? _("no change tried, alone or with others, makes it fit; "
	    "the closest, least memory first:") : _("no change tried could be evaluated, so "
	    "none is known to make it fit:"));
	for (int i = 0; i < n; i++) {
		change_words(&ch[i], what, sizeof what);
		if (ch[i].why[0] != '\0')
			fprintf(fp, _("  %s: not evaluated: %s\n"), what, ch[i].why);
		else
			fprintf(fp, ch[i].fits ? _("  %s: fits; memory %s, step %s\n") :
			    _("  %s: does not fit; memory %s, step %s\n"), what,
			    cli_bytes(ch[i].max_mem, b[0]), cli_ns(ch[i].step_ns, b[1]));
	}
}

const char *
cli_model_str(const sl_graph *g, char *buf, size_t len)
{
	int64_t seq = 0;
	char name[160];

	sl_esc_buf(g->name != NULL ? g->name : "?", name, sizeof name);
	/* a sequence where the step's input has one: token ids [batch, seq],
	 * or features [batch, seq, hidden]; [batch, features] has none (as
	 * eval.c counts tokens) */
	for (int i = 0; i < g->n_tensors; i++) {
		const sl_tensor *t = &g->tensors[i];
		bool ids = t->dtype == SL_DT_I32 || t->dtype == SL_DT_I64;

		if (t->role != SL_ROLE_INPUT || t->rank < 1)
			continue;
		if (t->rank >= (ids ? 2 : 3))
			seq = t->dims[1];
		break;
	}
	if (seq > 0)
		snprintf(buf, len, _("%s (sequence %lld)"), name, (long long)seq);
	else
		snprintf(buf, len, "%s", name);
	return buf;
}
