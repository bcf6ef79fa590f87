/*
 * json.c: the one JSON reader and writer (json.h).  Reading is a strict
 * scanner that records where every value starts, then jansson for the
 * values.  The scanner follows RFC 8259: no comments, no trailing commas,
 * strings in valid UTF-8 without raw control characters, integers that fit
 * in 64 bits (jansson's json_int_t) and finite reals.  Recursion is bounded
 * by JP_MAX_DEPTH, so no input can exhaust the stack.
 */
#include "internal.h"
#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

struct jp_doc {
	jp_node *root;
};

typedef struct jp_scanner {
	const unsigned char *s;
	size_t len, pos;
	int line, col;		/* of the byte at pos */
	jp_error *e;
	int failed;
	bool prune;		/* keep only the nodes on the path (jp_scan_path) */
	bool dups;		/* repeated members allowed */
	/* values the tree may still take (< 0: no bound; jp_scan_budget) */
	int64_t values_left;
	/* the last number scanned: where its text is, an integer or not */
	size_t num_start, num_len;
	bool num_int;
} jp_scanner;

static int jp_value(jp_scanner *sc, jp_node *n, int depth, const char *on);

static void
jp_fail_at(jp_scanner *sc, int line, int col, const char *fmt, ...)
{
	va_list ap;

	if (sc->failed)
		return;
	sc->failed = 1;
	if (sc->e == NULL)
		return;
	sc->e->line = line;
	sc->e->col = col;
	va_start(ap, fmt);
	vsnprintf(sc->e->msg, sizeof sc->e->msg, fmt, ap);
	va_end(ap);
}

#define jp_fail(sc, ...) jp_fail_at((sc), (sc)->line, (sc)->col, __VA_ARGS__)

static int
jp_peek(const jp_scanner *sc)
{
	return sc->pos < sc->len ? sc->s[sc->pos] : -1;
}

/* Moves past one byte; a column counts bytes that start a UTF-8 character. */
static void
jp_next(jp_scanner *sc)
{
	unsigned char c = sc->s[sc->pos++];

	if (c == '\n') {
		sc->line++;
		sc->col = 1;
	} else if ((c & 0xc0) != 0x80)
		sc->col++;
}

static void
jp_skip_ws(jp_scanner *sc)
{
	int c;

	while ((c = jp_peek(sc)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		jp_next(sc);
}

/* Describes the character at the scanner for "got ..." in a message. */
static const char *
jp_got(const jp_scanner *sc, char *buf, size_t len)
{
	int c = jp_peek(sc);

	if (c < 0)
		snprintf(buf, len, "%s", _("end of file"));
	else if (c == '\'')
		snprintf(buf, len, "%s", _("''' (strings need double quotes)"));
	else if (isalpha(c) || c == '_') {
		size_t i = sc->pos, n = 0;
		char word[24];

		while (i < sc->len && n < sizeof word - 1 &&
		    (isalnum(sc->s[i]) || sc->s[i] == '_' || sc->s[i] == '-'))
			word[n++] = (char)sc->s[i++];
		word[n] = '\0';
		snprintf(buf, len, _("'%s' (strings need double quotes)"), word);
	} else if (c >= 0x20 && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else if (c == '\n')
		snprintf(buf, len, "%s", _("a line break"));
	else if (c == 0 || c >= 0x80)
		snprintf(buf, len, _("byte 0x%02x (not JSON text; is it a binary file?)"), c);
	else
		snprintf(buf, len, _("control character 0x%02x"), c);
	return buf;
}

static jp_node *
jp_node_new(jp_scanner *sc, jp_type t)
{
	jp_node *n = sl_xcalloc(1, sizeof *n);

	n->type = t;
	n->line = sc->line;
	n->col = sc->col;
	return n;
}

static void
jp_node_free(jp_node *n)
{
	if (n == NULL)
		return;
	for (int i = 0; i < n->n; i++)
		jp_node_free(n->kids[i]);
	free(n->kids);
	free(n->key);
	free(n);
}

/*
 * The rest of the path after a child (member key, or element idx when key is
 * NULL) of a node whose remaining path is on; NULL when the child is off the
 * path, or past its end.  Without pruning every node is kept ("").
 */
static const char *
jp_step(const jp_scanner *sc, const char *on, const char *key, int idx)
{
	const char *p = on;

	if (!sc->prune)
		return on;
	if (p == NULL || *p == '\0')
		return NULL;
	if (key != NULL) {
		size_t k = strlen(key);

		if (*p == '.')
			p++;
		if (strncmp(p, key, k) != 0 ||
		    (p[k] != '\0' && p[k] != '.' && p[k] != '['))
			return NULL;
		return p + k;
	} else {
		char *end;
		long i;

		if (*p != '[')
			return NULL;
		i = strtol(p + 1, &end, 10);
		if (end == p + 1 || *end != ']' || i != idx)
			return NULL;
		return end + 1;
	}
}

static void
jp_add_kid(jp_node *n, jp_node *k)
{
	/* grow by powers of two */
	if ((n->n & (n->n - 1)) == 0)
		n->kids = sl_xrealloc(n->kids,
		    (size_t)(n->n ? 2 * n->n : 1) * sizeof *n->kids);
	n->kids[n->n++] = k;
}

static void
jp_put_utf8(char *out, size_t *o, unsigned cp)
{
	if (cp < 0x80)
		out[(*o)++] = (char)cp;
	else if (cp < 0x800) {
		out[(*o)++] = (char)(0xc0 | (cp >> 6));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		out[(*o)++] = (char)(0xe0 | (cp >> 12));
		out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	} else {
		out[(*o)++] = (char)(0xf0 | (cp >> 18));
		out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
		out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[(*o)++] = (char)(0x80 | (cp & 0x3f));
	}
}

/* Length of the valid UTF-8 sequence at p (n bytes left), 0 if invalid. */
static int
jp_utf8_len(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];
	int len;
	unsigned char lo = 0x80, hi = 0xbf;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;	/* no UTF-16 surrogates */
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if ((size_t)len > n)
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

static int
jp_hex4(const unsigned char *p, unsigned *v)
{
	*v = 0;
	for (int i = 0; i < 4; i++) {
		int c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		*v = *v * 16 + (unsigned)d;
	}
	return 0;
}

/*
 * Decodes the escape at the backslash into *cp and moves past it.  \u pairs
 * of UTF-16 surrogates give one code point; NUL and lone surrogates are
 * refused, as jansson refuses them.
 */
static int
jp_escape(jp_scanner *sc, int sline, int scol, unsigned *cp)
{
	const unsigned char *p;
	unsigned lo;
	int ec, bl = sc->line, bc = sc->col;

	jp_next(sc);		/* the backslash */
	ec = jp_peek(sc);
	switch (ec) {
	case '"': case '\\': case '/': *cp = (unsigned)ec; break;
	case 'b': *cp = '\b'; break;
	case 'f': *cp = '\f'; break;
	case 'n': *cp = '\n'; break;
	case 'r': *cp = '\r'; break;
	case 't': *cp = '\t'; break;
	case 'u':
		if (sc->len - sc->pos < 5 || jp_hex4(sc->s + sc->pos + 1, cp) != 0) {
			jp_fail_at(sc, bl, bc, _("expected four hexadecimal digits after \\u"));
			return -1;
		}
		if (*cp == 0) {
			jp_fail_at(sc, bl, bc, _("\\u0000 (a NUL character) is not allowed in strings"));
			return -1;
		}
		if (*cp >= 0xdc00 && *cp <= 0xdfff) {
			jp_fail_at(sc, bl, bc, _("invalid \\u%04x: a lone low surrogate"), *cp);
			return -1;
		}
		if (*cp >= 0xd800 && *cp <= 0xdbff) {
			p = sc->s + sc->pos + 5;
			if (sc->len - sc->pos < 11 || p[0] != '\\' || p[1] != 'u' ||
			    jp_hex4(p + 2, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff) {
				jp_fail_at(sc, bl, bc, _("invalid \\u%04x: a high surrogate must be "
				    "followed by a \\u low surrogate"), *cp);
				return -1;
			}
			*cp = 0x10000 + ((*cp - 0xd800) << 10) + (lo - 0xdc00);
			for (int i = 0; i < 6; i++)
				jp_next(sc);
		}
		for (int i = 0; i < 4; i++)
			jp_next(sc);
		break;
	default:
		if (ec < 0)
			jp_fail_at(sc, sline, scol, _("unterminated string: end of "
			    "file before its closing '\"'"));
		else if (ec >= 0x20 && ec < 0x7f)
			jp_fail_at(sc, bl, bc, _("invalid escape '\\%c' in a string (expected one "
			    "of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"), ec);
		else
			jp_fail_at(sc, bl, bc, _("invalid escape: byte 0x%02x after '\\'"), ec);
		return -1;
	}
	jp_next(sc);
	return 0;
}

/*
 * Scans a string at the opening quote.  With out non-NULL, returns the
 * decoded text in a new buffer (keys are compared decoded).
 */
static int
jp_string(jp_scanner *sc, char **out)
{
	int sline = sc->line, scol = sc->col;
	char *buf = NULL;
	size_t o = 0, cap = 0;

	jp_next(sc);		/* the opening quote */
	if (out != NULL) {
		cap = 32;
		buf = sl_xmalloc(cap);
	}
	for (;;) {
		int c = jp_peek(sc);

		if (buf != NULL && o + 5 > cap) {
			cap *= 2;
			buf = sl_xrealloc(buf, cap);
		}

		if (c < 0) {
			jp_fail_at(sc, sline, scol,
			    _("unterminated string: end of file before its closing '\"'"));
			goto bad;
		}
		if (c == '"') {
			jp_next(sc);
			break;
		}
		if (c == '\n') {
			jp_fail(sc, _("line break inside a string: close the string "
			    "with '\"' (it starts at line %d, column %d) or write \\n"),
			    sline, scol);
			goto bad;
		}
		if (c == 0) {
			jp_fail(sc, _("NUL byte inside a string (not JSON text; "
			    "is it a binary file?)"));
			goto bad;
		}
		if (c < 0x20) {
			jp_fail(sc, _("control character 0x%02x inside a string: "
			    "write it as \\u%04x"), c, c);
			goto bad;
		}
		if (c == '\\') {
			unsigned cp;

			if (jp_escape(sc, sline, scol, &cp) != 0)
				goto bad;
			if (buf != NULL)
				jp_put_utf8(buf, &o, cp);
			continue;
		}
		if (c >= 0x80) {
			int n = jp_utf8_len(sc->s + sc->pos, sc->len - sc->pos);

			if (n == 0) {
				jp_fail(sc, _("invalid UTF-8: byte 0x%02x inside a string "
				    "(the file must be UTF-8 text)"), c);
				goto bad;
			}
			for (int i = 0; i < n; i++) {
				if (buf != NULL)
					buf[o++] = (char)sc->s[sc->pos];
				jp_next(sc);
			}
			continue;
		}
		if (buf != NULL)
			buf[o++] = (char)c;
		jp_next(sc);
	}
	if (out != NULL) {
		buf[o] = '\0';
		*out = buf;
	}
	return 0;
bad:
	free(buf);
	return -1;
}

/* The number from start to the scanner, as a message shows it. */
static const char *
jp_shown(const jp_scanner *sc, size_t start, char *buf, size_t len)
{
	size_t n = sc->pos - start;

	if (n < 40)
		snprintf(buf, len, "%.*s", (int)n, sc->s + start);
	else
		snprintf(buf, len, "%.20s... (%zu digits)", sc->s + start, n);
	return buf;
}

static int
jp_number(jp_scanner *sc)
{
	size_t start = sc->pos;
	int line = sc->line, col = sc->col;
	bool neg = false, is_int = true;
	size_t ndig;
	char shown[80];

	if (jp_peek(sc) == '-') {
		neg = true;
		jp_next(sc);
	}
	if (!isdigit(jp_peek(sc))) {
		jp_fail(sc, _("expected a digit after '-'"));
		return -1;
	}
	if (jp_peek(sc) == '0') {
		jp_next(sc);
		if (isdigit(jp_peek(sc))) {
			jp_fail_at(sc, line, col,
			    _("a number cannot start with 0 followed by digits"));
			return -1;
		}
	} else
		while (isdigit(jp_peek(sc)))
			jp_next(sc);
	ndig = sc->pos - start - (neg ? 1 : 0);
	if (jp_peek(sc) == '.') {
		is_int = false;
		jp_next(sc);
		if (!isdigit(jp_peek(sc))) {
			jp_fail(sc, _("expected a digit after the decimal point"));
			return -1;
		}
		while (isdigit(jp_peek(sc)))
			jp_next(sc);
	}
	if (jp_peek(sc) == 'e' || jp_peek(sc) == 'E') {
		is_int = false;
		jp_next(sc);
		if (jp_peek(sc) == '+' || jp_peek(sc) == '-')
			jp_next(sc);
		if (!isdigit(jp_peek(sc))) {
			jp_fail(sc, _("expected a digit in the exponent"));
			return -1;
		}
		while (isdigit(jp_peek(sc)))
			jp_next(sc);
	}

	sc->num_start = start;
	sc->num_len = sc->pos - start;
	sc->num_int = is_int;
	if (is_int) {
		const char *lim = neg ? "9223372036854775808" : "9223372036854775807";
		const char *d = (const char *)sc->s + start + (neg ? 1 : 0);

		if (ndig > 19 || (ndig == 19 && strncmp(d, lim, 19) > 0)) {
			jp_fail_at(sc, line, col, _("integer %s is too large: "
			    "integers must fit in 64 bits (at most %s)"),
			    jp_shown(sc, start, shown, sizeof shown),
			    neg ? "-9223372036854775808" : "9223372036854775807");
			return -1;
		}
	} else {
		size_t n = sc->pos - start;
		char *tmp = sl_xmalloc(n + 1);
		double v;

		memcpy(tmp, sc->s + start, n);
		tmp[n] = '\0';
		errno = 0;
		v = strtod(tmp, NULL);
		free(tmp);
		if (isinf(v)) {
			jp_fail_at(sc, line, col,
			    _("number %s is out of range of a double"),
			    jp_shown(sc, start, shown, sizeof shown));
			return -1;
		}
	}
	return 0;
}

static int
jp_literal(jp_scanner *sc, const char *word)
{
	size_t n = strlen(word);

	if (sc->len - sc->pos < n || memcmp(sc->s + sc->pos, word, n) != 0 ||
	    (sc->len - sc->pos > n && isalnum(sc->s[sc->pos + n]))) {
		char got[64];
		jp_fail(sc, _("expected a JSON value (object, array, string, "
		    "number, true, false or null), got %s"), jp_got(sc, got, sizeof got));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		jp_next(sc);
	return 0;
}

static int
jp_object(jp_scanner *sc, jp_node *n, int depth, const char *on)
{
	char got[96], last[128] = "";
	int count = 0;

	jp_next(sc);		/* '{' */
	jp_skip_ws(sc);
	if (jp_peek(sc) == '}') {
		jp_next(sc);
		return 0;
	}
	for (;;) {
		jp_node *kid;
		char *key = NULL;
		const char *kon;
		int kline, kcol;

		jp_skip_ws(sc);
		if (jp_peek(sc) != '"') {
			if (count > 0 && jp_peek(sc) == '}')
				jp_fail(sc, _("expected a member name in double quotes "
				    "after ',', got '}' (remove the trailing comma)"));
			else if (jp_peek(sc) < 0)
				jp_fail(sc, _("end of file inside the object that "
				    "starts at line %d, column %d"), n->line, n->col);
			else
				jp_fail(sc, _("expected a member name in double "
				    "quotes%s, got %s"), count > 0 ? "" : _(" or '}'"),
				    jp_got(sc, got, sizeof got));
			return -1;
		}
		kline = sc->line;
		kcol = sc->col;
		if (jp_string(sc, &key) != 0)
			return -1;
		/* duplicate keys: jansson would refuse them too, less precisely */
		if (n->n <= 1024 && !sc->dups && !sc->prune)
			for (int i = 0; i < n->n; i++)
				if (strcmp(n->kids[i]->key, key) == 0) {
					jp_fail_at(sc, kline, kcol, _("duplicate member "
					    "\"%s\" (first at line %d, column %d)"), key,
					    n->kids[i]->key_line, n->kids[i]->key_col);
					free(key);
					return -1;
				}
		jp_skip_ws(sc);
		if (jp_peek(sc) != ':') {
			jp_fail(sc, _("expected ':' after the member name \"%s\", got %s"),
			    key, jp_got(sc, got, sizeof got));
			free(key);
			return -1;
		}
		jp_next(sc);
		jp_skip_ws(sc);
		kon = jp_step(sc, on, key, -1);
		count++;
		if (kon == NULL && sc->prune) {
			/* off the path: scanned, nothing of it kept */
			jp_node off = { .type = JP_NULL };

			snprintf(last, sizeof last, "%s", key);
			free(key);
			kid = NULL;
			if (jp_value(sc, &off, depth + 1, NULL) != 0)
				return -1;
		} else {
			kid = jp_node_new(sc, JP_NULL);
			kid->key = key;
			kid->key_line = kline;
			kid->key_col = kcol;
			kid->idx = count - 1;
			jp_add_kid(n, kid);
			if (jp_value(sc, kid, depth + 1, kon) != 0)
				return -1;
		}
		jp_skip_ws(sc);
		if (jp_peek(sc) == ',') {
			jp_next(sc);
			continue;
		}
		if (jp_peek(sc) == '}') {
			jp_next(sc);
			return 0;
		}
		if (jp_peek(sc) < 0)
			jp_fail(sc, _("end of file inside the object that starts at "
			    "line %d, column %d: expected ',' or '}'"), n->line, n->col);
		else
			jp_fail(sc, _("expected ',' or '}' after the member \"%s\", got %s"),
			    kid != NULL ? kid->key : last, jp_got(sc, got, sizeof got));
		return -1;
	}
}

static int
jp_array(jp_scanner *sc, jp_node *n, int depth, const char *on)
{
	char got[96];
	int count = 0;

	jp_next(sc);		/* '[' */
	jp_skip_ws(sc);
	if (jp_peek(sc) == ']') {
		jp_next(sc);
		return 0;
	}
	for (;;) {
		jp_node *kid;
		const char *kon;

		jp_skip_ws(sc);
		if (count > 0 && jp_peek(sc) == ']') {
			jp_fail(sc, _("expected a value after ',', got ']' "
			    "(remove the trailing comma)"));
			return -1;
		}
		if (jp_peek(sc) < 0) {
			jp_fail(sc, _("end of file inside the array that starts at "
			    "line %d, column %d"), n->line, n->col);
			return -1;
		}
		kon = jp_step(sc, on, NULL, count++);
		if (kon == NULL && sc->prune) {
			/* off the path: scanned, nothing of it kept */
			jp_node off = { .type = JP_NULL };

			if (jp_value(sc, &off, depth + 1, NULL) != 0)
				return -1;
		} else {
			kid = jp_node_new(sc, JP_NULL);
			kid->idx = count - 1;
			jp_add_kid(n, kid);
			if (jp_value(sc, kid, depth + 1, kon) != 0)
				return -1;
		}
		jp_skip_ws(sc);
		if (jp_peek(sc) == ',') {
			jp_next(sc);
			continue;
		}
		if (jp_peek(sc) == ']') {
			jp_next(sc);
			return 0;
		}
		if (jp_peek(sc) < 0)
			jp_fail(sc, _("end of file inside the array that starts at "
			    "line %d, column %d: expected ',' or ']'"), n->line, n->col);
		else
			jp_fail(sc, _("expected ',' or ']' after element %d of the "
			    "array, got %s"), count - 1, jp_got(sc, got, sizeof got));
		return -1;
	}
}

/* Scans the value at the scanner into n (whose position is already set). */
static int
jp_value(jp_scanner *sc, jp_node *n, int depth, const char *on)
{
	char got[96];
	int c = jp_peek(sc);

	n->line = sc->line;
	n->col = sc->col;
	if (sc->values_left == 0 && c >= 0) {
		char b[32];

		jp_fail(sc, _("too many values: the document would take more "
		    "than %s of memory to hold (SHARDLAB_MAX_INPUT)"),
		    sl_format_bytes(sl_max_input(), b, sizeof b));
		if (sc->e != NULL)
			sc->e->limit = true;
		return -1;
	}
	if (sc->values_left > 0)
		sc->values_left--;
	if ((c == '{' || c == '[') && depth >= JP_MAX_DEPTH) {
		jp_fail(sc, _("arrays and objects nested deeper than %d levels"),
		    JP_MAX_DEPTH);
		return -1;
	}
	switch (c) {
	case '{':
		n->type = JP_OBJECT;
		return jp_object(sc, n, depth, on);
	case '[':
		n->type = JP_ARRAY;
		return jp_array(sc, n, depth, on);
	case '"':
		n->type = JP_STRING;
		return jp_string(sc, NULL);
	case 't':
		n->type = JP_TRUE;
		return jp_literal(sc, "true");
	case 'f':
		n->type = JP_FALSE;
		return jp_literal(sc, "false");
	case 'n':
		n->type = JP_NULL;
		return jp_literal(sc, "null");
	default:
		if (c == '-' || (c >= '0' && c <= '9')) {
			n->type = JP_NUMBER;
			return jp_number(sc);
		}
		jp_fail(sc, _("expected a JSON value (object, array, string, "
		    "number, true, false or null), got %s"),
		    jp_got(sc, got, sizeof got));
		return -1;
	}
}

/*
 * What one value costs held in memory: its position node here (48 bytes
 * and its slot in its parent's array, from the allocator's 64-byte chunks)
 * and jansson's value (an integer is 32 bytes, a real 32, an array or an
 * object more, its slot in its container 8 to 16): 128 bytes measured on
 * long arrays of small numbers, against 2 bytes of text for "0,".  A
 * document may hold sl_max_input() / JP_VALUE_BYTES values, so that what
 * it takes in memory is bounded by the same limit as its text.
 */
#define JP_VALUE_BYTES 128

static int64_t
jp_max_values(void)
{
	int64_t m = sl_max_input();

	return (m > 0 ? m : SL_MAX_INPUT_DEFAULT) / JP_VALUE_BYTES;
}

static jp_doc *
jp_scan_on(const char *text, size_t len, const char *path, bool dups,
    int64_t max_values, jp_error *e)
{
	jp_scanner sc = {
		.s = (const unsigned char *)text, .len = len, .pos = 0,
		.line = 1, .col = 1, .e = e, .prune = path != NULL,
		.dups = dups, .values_left = max_values,
	};
	jp_doc *d;
	jp_node *root;
	char got[96];

	if (e != NULL)
		memset(e, 0, sizeof *e);
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		sc.pos = 3;	/* byte order mark: not a character of the text */
	jp_skip_ws(&sc);
	if (jp_peek(&sc) < 0) {
		jp_fail(&sc, _("expected a JSON value, got end of file"));
		return NULL;
	}
	root = jp_node_new(&sc, JP_NULL);
	if (jp_value(&sc, root, 0, path != NULL ? path : "") != 0) {
		jp_node_free(root);
		return NULL;
	}
	jp_skip_ws(&sc);
	if (jp_peek(&sc) >= 0) {
		jp_fail(&sc, _("unexpected %s after the end of the JSON value "
		    "that starts at line %d, column %d"), jp_got(&sc, got, sizeof got),
		    root->line, root->col);
		jp_node_free(root);
		return NULL;
	}
	d = sl_xcalloc(1, sizeof *d);
	d->root = root;
	return d;
}

jp_doc *
jp_scan(const char *text, size_t len, jp_error *e)
{
	return jp_scan_on(text, len, NULL, false, -1, e);
}

jp_doc *
jp_scan_path(const char *text, size_t len, const char *path, jp_error *e)
{
	return jp_scan_on(text, len, path, false, -1, e);
}

/* ------------------------------------------------------------ pull reader */

struct jp_pull {
	jp_scanner sc;
	jp_error e;
	int depth;
	char stack[JP_MAX_DEPTH + 1];	/* '{' or '[' of each open container */
	int count[JP_MAX_DEPTH + 1];	/* members or elements read so far */
	int open_line[JP_MAX_DEPTH + 1], open_col[JP_MAX_DEPTH + 1];
	char *member[JP_MAX_DEPTH + 1];	/* the last member name of each object */
	bool started, ended;
	char *key, *str;		/* of the last token */
	int line, col;			/* of the last token */
};

jp_pull *
jp_pull_new(const char *text, size_t len)
{
	jp_pull *p = sl_xcalloc(1, sizeof *p);

	p->sc.s = (const unsigned char *)text;
	p->sc.len = len;
	p->sc.line = p->sc.col = 1;
	p->sc.e = &p->e;
	p->sc.values_left = -1;
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		p->sc.pos = 3;	/* byte order mark: not a character of the text */
	return p;
}

void
jp_pull_free(jp_pull *p)
{
	if (p == NULL)
		return;
	free(p->key);
	free(p->str);
	for (int i = 0; i <= JP_MAX_DEPTH; i++)
		free(p->member[i]);
	free(p);
}

/* The value at the scanner: a scalar whole, a container opened. */
static jp_tok
jp_pull_value(jp_pull *p)
{
	jp_scanner *sc = &p->sc;
	int c = jp_peek(sc), rc;
	char got[96];

	p->line = sc->line;
	p->col = sc->col;
	switch (c) {
	case '{':
	case '[':
		if (p->depth >= JP_MAX_DEPTH) {
			jp_fail(sc, _("arrays and objects nested deeper than %d levels"),
			    JP_MAX_DEPTH);
			return JP_T_ERROR;
		}
		p->stack[p->depth] = (char)c;
		p->count[p->depth] = 0;
		p->open_line[p->depth] = sc->line;
		p->open_col[p->depth] = sc->col;
		free(p->member[p->depth]);
		p->member[p->depth] = NULL;
		p->depth++;
		jp_next(sc);
		return c == '{' ? JP_T_OBJECT : JP_T_ARRAY;
	case '"':
		rc = jp_string(sc, &p->str);
		return rc == 0 ? JP_T_STRING : JP_T_ERROR;
	case 't':
		return jp_literal(sc, "true") == 0 ? JP_T_TRUE : JP_T_ERROR;
	case 'f':
		return jp_literal(sc, "false") == 0 ? JP_T_FALSE : JP_T_ERROR;
	case 'n':
		return jp_literal(sc, "null") == 0 ? JP_T_NULL : JP_T_ERROR;
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return jp_number(sc) == 0 ? JP_T_NUMBER : JP_T_ERROR;
		jp_fail(sc, _("expected a JSON value (object, array, string, "
		    "number, true, false or null), got %s"),
		    jp_got(sc, got, sizeof got));
		return JP_T_ERROR;
	}
}

/* Closes the innermost container (the scanner is at its bracket). */
static jp_tok
jp_pull_close(jp_pull *p)
{
	p->line = p->sc.line;
	p->col = p->sc.col;
	jp_next(&p->sc);
	p->depth--;
	return JP_T_END;
}

jp_tok
jp_pull_next(jp_pull *p)
{
	jp_scanner *sc = &p->sc;
	char got[96];
	int top, c;

	free(p->key);
	free(p->str);
	p->key = p->str = NULL;
	if (sc->failed)
		return JP_T_ERROR;
	jp_skip_ws(sc);
	if (p->depth == 0) {
		if (!p->started) {
			p->started = true;
			if (jp_peek(sc) < 0) {
				jp_fail(sc, _("expected a JSON value, got end of file"));
				return JP_T_ERROR;
			}
			return jp_pull_value(p);
		}
		if (jp_peek(sc) >= 0) {
			jp_fail(sc, _("unexpected %s after the end of the JSON value "
			    "that starts at line %d, column %d"), jp_got(sc, got,
			    sizeof got), p->open_line[0], p->open_col[0]);
			return JP_T_ERROR;
		}
		p->ended = true;
		return JP_T_EOF;
	}
	top = p->depth - 1;
	c = jp_peek(sc);
	if (p->count[top] == 0) {
		if (c == (p->stack[top] == '{' ? '}' : ']'))
			return jp_pull_close(p);
	} else if (c == ',') {
		jp_next(sc);
		jp_skip_ws(sc);
		c = jp_peek(sc);
		if (c == (p->stack[top] == '{' ? '}' : ']')) {
			if (p->stack[top] == '{')
				jp_fail(sc, _("expected a member name in double quotes "
				    "after ',', got '}' (remove the trailing comma)"));
			else
				jp_fail(sc, _("expected a value after ',', got ']' "
				    "(remove the trailing comma)"));
			return JP_T_ERROR;
		}
	} else if (c == (p->stack[top] == '{' ? '}' : ']')) {
		return jp_pull_close(p);
	} else {
		if (c < 0)
			jp_fail(sc, p->stack[top] == '{' ?
			    _("end of file inside the object that starts at "
			    "line %d, column %d: expected ',' or '}'") :
			    _("end of file inside the array that starts at "
			    "line %d, column %d: expected ',' or ']'"),
			    p->open_line[top], p->open_col[top]);
		else if (p->stack[top] == '{')
			jp_fail(sc, _("expected ',' or '}' after the member \"%s\", got %s"),
			    p->member[top] != NULL ? p->member[top] : "",
			    jp_got(sc, got, sizeof got));
		else
			jp_fail(sc, _("expected ',' or ']' after element %d of the "
			    "array, got %s"), p->count[top] - 1, jp_got(sc, got, sizeof got));
		return JP_T_ERROR;
	}
	if (c < 0) {
		jp_fail(sc, p->stack[top] == '{' ? _("end of file inside the object "
		    "that starts at line %d, column %d") : _("end of file inside "
		    "the array that starts at line %d, column %d"),
		    p->open_line[top], p->open_col[top]);
		return JP_T_ERROR;
	}
	p->count[top]++;
	if (p->stack[top] == '{') {
		if (c != '"') {
			jp_fail(sc, _("expected a member name in double "
			    "quotes%s, got %s"), p->count[top] > 1 ? "" : _(" or '}'"),
			    jp_got(sc, got, sizeof got));
			return JP_T_ERROR;
		}
		if (jp_string(sc, &p->key) != 0)
			return JP_T_ERROR;
		free(p->member[top]);
		p->member[top] = sl_xstrdup(p->key);
		jp_skip_ws(sc);
		if (jp_peek(sc) != ':') {
			jp_fail(sc, _("expected ':' after the member name \"%s\", got %s"),
			    p->key, jp_got(sc, got, sizeof got));
			return JP_T_ERROR;
		}
		jp_next(sc);
		jp_skip_ws(sc);
	}
	return jp_pull_value(p);
}

jp_tok
jp_pull_skip(jp_pull *p, jp_tok t)
{
	int depth = p->depth;

	if (t != JP_T_OBJECT && t != JP_T_ARRAY)
		return t;
	while (p->depth >= depth)
		if ((t = jp_pull_next(p)) == JP_T_ERROR)
			return t;
	return JP_T_END;
}

const char *
jp_pull_key(const jp_pull *p)
{
	return p->key;
}

const char *
jp_pull_string(const jp_pull *p)
{
	return p->str;
}

void
jp_pull_where(const jp_pull *p, int *line, int *col)
{
	*line = p->line;
	*col = p->col;
}

int
jp_pull_depth(const jp_pull *p)
{
	return p->depth;
}

bool
jp_pull_int64(const jp_pull *p, int64_t *out)
{
	const jp_scanner *sc = &p->sc;
	char small[64], *buf = small;
	bool ok = false;
	double d;

	if (sc->num_len == 0)
		return false;
	if (sc->num_len >= sizeof small)
		buf = sl_xmalloc(sc->num_len + 1);
	memcpy(buf, sc->s + sc->num_start, sc->num_len);
	buf[sc->num_len] = '\0';
	if (sc->num_int) {
		/* jp_number checked that it fits */
		*out = (int64_t)strtoll(buf, NULL, 10);
		ok = true;
	} else {
		/* an integral real that fits, as jansson's reals are read */
		d = strtod(buf, NULL);
		if (d >= -9.2e18 && d <= 9.2e18 && d == (double)(int64_t)d) {
			*out = (int64_t)d;
			ok = true;
		}
	}
	if (buf != small)
		free(buf);
	return ok;
}

const jp_error *
jp_pull_error(const jp_pull *p)
{
	return &p->e;
}

void
jp_free(jp_doc *d)
{
	if (d == NULL)
		return;
	jp_node_free(d->root);
	free(d);
}

const jp_node *
jp_root(const jp_doc *d)
{
	return d != NULL ? d->root : NULL;
}

const jp_node *
jp_member(const jp_node *n, const char *key)
{
	if (n == NULL || n->type != JP_OBJECT)
		return NULL;
	for (int i = 0; i < n->n; i++)
		if (strcmp(n->kids[i]->key, key) == 0)
			return n->kids[i];
	return NULL;
}

const jp_node *
jp_index(const jp_node *n, int i)
{
	if (n == NULL || n->type != JP_ARRAY || i < 0)
		return NULL;
	if (i < n->n && n->kids[i]->idx == i)
		return n->kids[i];
	/* a scan along a path keeps the element on it alone */
	for (int k = 0; k < n->n; k++)
		if (n->kids[k]->idx == i)
			return n->kids[k];
	return NULL;
}

const jp_node *
jp_find(const jp_doc *d, const char *path)
{
	const jp_node *n = jp_root(d);
	const char *p = path;

	while (n != NULL && *p != '\0') {
		if (*p == '[') {
			char *end;
			long i = strtol(p + 1, &end, 10);

			if (end == p + 1 || *end != ']' || i < 0 || i > INT32_MAX)
				return NULL;
			n = jp_index(n, (int)i);
			p = end + 1;
		} else {
			char key[256];
			size_t k = 0;

			if (*p == '.')
				p++;
			while (*p != '\0' && *p != '.' && *p != '[' &&
			    k < sizeof key - 1)
				key[k++] = *p++;
			key[k] = '\0';
			n = jp_member(n, key);
		}
	}
	return n;
}

/* ------------------------------------------------------------- documents */

int
sl_json_read(sl_json *j, const char *file, const char *text, size_t len,
    unsigned flags, int code, sl_error *err)
{
	json_error_t je;
	jp_error e;
	size_t bom;

	memset(j, 0, sizeof *j);
	j->file = file;
	/*
	 * The positions first: the scanner's message about a syntax error is
	 * more precise than jansson's, and it stops a document of more values
	 * than memory allows before jansson builds anything.
	 */
	if ((j->pos = jp_scan_on(text, len, NULL,
	    (flags & SL_JSON_DUPLICATES) != 0, jp_max_values(), &e)) == NULL)
		return sl_error_set(err, code, file, e.line, e.col,
		    e.limit ? "%s" : _("not valid JSON: %s"), e.msg);
	/* jansson refuses a byte order mark; the scanner skips it */
	bom = len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
	j->root = json_loadb(text + bom, len - bom,
	    (flags & SL_JSON_DUPLICATES) ? 0 : JSON_REJECT_DUPLICATES, &je);
	if (j->root == NULL) {
		jp_free(j->pos);
		j->pos = NULL;
		/* the scanner accepts a little more than jansson */
		return sl_error_set(err, code, file, je.line, je.column,
		    _("not valid JSON: %s"), je.text);
	}
	return SL_OK;
}

void
sl_json_text(sl_json *j, const char *file, const char *text, size_t len)
{
	memset(j, 0, sizeof *j);
	j->file = file;
	j->text = text;
	j->len = len;
}

int
sl_json_read_file(sl_json *j, const char *file, unsigned flags, int code,
    sl_error *err)
{
	size_t len;
	char *text = sl_read_file(file, &len, err);
	int rc;

	memset(j, 0, sizeof *j);
	if (text == NULL)
		return err != NULL && err->code != SL_OK ? err->code : code;
	rc = sl_json_read(j, file, text, len, flags, code, err);
	free(text);
	return rc;
}

void
sl_json_free(sl_json *j)
{
	if (j == NULL)
		return;
	json_decref(j->root);
	jp_free(j->pos);
	memset(j, 0, sizeof *j);
}

/* The node of path in d, or of its deepest ancestor there; p is cut to it. */
static const jp_node *
jp_deepest(const jp_doc *d, char *p)
{
	const jp_node *n;

	for (;;) {
		char *dot, *br, *cut;

		if ((n = jp_find(d, p)) != NULL || p[0] == '\0')
			break;
		/* drop the last member name or index */
		dot = strrchr(p, '.');
		br = strrchr(p, '[');
		cut = dot == NULL || (br != NULL && br > dot) ? br : dot;
		*(cut != NULL ? cut : p) = '\0';
	}
	return n != NULL ? n : jp_root(d);
}

const jp_node *
sl_json_node(const sl_json *j, const char *path)
{
	char p[512];

	if (j == NULL || j->pos == NULL)
		return NULL;
	snprintf(p, sizeof p, "%s", path != NULL ? path : "");
	return jp_deepest(j->pos, p);
}

void
sl_json_where(const sl_json *j, const char *path, int *line, int *col)
{
	char p[512];
	const jp_node *n;
	jp_doc *d = NULL;

	*line = *col = 0;
	if (j == NULL)
		return;
	snprintf(p, sizeof p, "%s", path != NULL ? path : "");
	if (j->pos != NULL)
		n = jp_deepest(j->pos, p);
	else if (j->text != NULL &&
	    (d = jp_scan_on(j->text, j->len, p, true, -1, NULL)) != NULL)
		n = jp_deepest(d, p);
	else
		n = NULL;
	if (n != NULL) {
		*line = n->line;
		*col = n->col;
	}
	jp_free(d);
}

int
sl_json_fail(const sl_json *j, sl_error *err, const char *path,
    const char *fmt, ...)
{
	char msg[sizeof err->msg];
	int line, col;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	sl_json_where(j, path, &line, &col);
	return sl_error_set(err, SL_EINPUT, j != NULL ? j->file : NULL, line,
	    col, "%s", msg);
}

/* ---------------------------------------------------------------- writer */

/*
 * The layout of every file shardlab writes (man shardlab-plan.5, LAYOUT):
 *  - the members of the top-level object, one per line, indented by two;
 *  - a table (a non-empty array whose elements are all objects or arrays)
 *    one element per line, two deeper than the line it opens on, so that
 *    records (operators, tensors, devices, events) diff and stream by line;
 *  - everything else on the line it starts on, ", " and ": " between, an
 *    array of more than SL_JSON_ROW scalars wrapped after every
 *    SL_JSON_ROW elements;
 *  - reals with the fewest significant digits (15, 16 or 17; from 1 for a
 *    subnormal one) that read back as the same double: 0.1, not
 *    0.10000000000000001; with an exponent below 1e-4, from 1e15 up and
 *    where it saves six zeros or more (4e-6, 2e12), else positional with
 *    ".0" added to what looks like an integer, so that a real stays a real;
 *  - strings as UTF-8 with only '"', '\\' and control characters escaped.
 */
#define SL_JSON_ROW 16

typedef struct jw_out {
	FILE *fp;		/* the file, or NULL for the buffer */
	char *s;
	size_t len, cap;
} jw_out;

static void
jw_put(jw_out *o, const char *s, size_t n)
{
	if (o->fp != NULL) {
		fwrite(s, 1, n, o->fp);
		return;
	}
	if (o->len + n + 1 > o->cap) {
		o->cap = (o->len + n + 1) * 2;
		o->s = sl_xrealloc(o->s, o->cap);
	}
	memcpy(o->s + o->len, s, n);
	o->len += n;
	o->s[o->len] = '\0';
}

static void
jw_puts(jw_out *o, const char *s)
{
	jw_put(o, s, strlen(s));
}

static void
jw_indent(jw_out *o, int n)
{
	static const char sp[] = "                                ";

	for (; n > 0; n -= (int)sizeof sp - 1)
		jw_put(o, sp, (size_t)(n < (int)sizeof sp - 1 ? n :
		    (int)sizeof sp - 1));
}

static void
jw_string(jw_out *o, const char *s, size_t n)
{
	size_t run = 0;

	jw_put(o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		jw_put(o, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"': jw_puts(o, "\\\""); break;
		case '\\': jw_puts(o, "\\\\"); break;
		case '\n': jw_puts(o, "\\n"); break;
		case '\r': jw_puts(o, "\\r"); break;
		case '\t': jw_puts(o, "\\t"); break;
		default:
			snprintf(esc, sizeof esc, "\\u%04x", c);
			jw_puts(o, esc);
		}
	}
	jw_put(o, s + run, n - run);
	jw_put(o, "\"", 1);
}

void
sl_json_format_real(double d, char *buf, size_t len)
{
	char m[40], *e, *p;
	int k, x;

	if (!isfinite(d)) {
		snprintf(buf, len, "null");
		return;
	}
	/*
	 * The fewest significant digits that read back as d.  A normal double
	 * holds more than 15 digits: when fewer read back, 15 give those with
	 * zeros after them.  A subnormal one holds fewer: it starts at one.
	 */
	for (k = d != 0.0 && fabs(d) < DBL_MIN ? 1 : 15; k < 17; k++) {
		snprintf(m, sizeof m, "%.*e", k - 1, d);
		if (strtod(m, NULL) == d)
			break;
	}
	snprintf(m, sizeof m, "%.*e", k - 1, d);
	e = strchr(m, 'e');
	x = atoi(e + 1);
	*e = '\0';
	/* the mantissa without its trailing zeros: k digits */
	if ((p = strchr(m, '.')) != NULL) {
		char *z = e - 1;

		while (z > p && *z == '0')
			*z-- = '\0';
		if (z == p)
			*z = '\0';
	}
	k = 0;
	for (p = m; *p != '\0'; p++)
		k += *p >= '0' && *p <= '9';
	if (d == 0.0)
		k = 1;
	/* an exponent for the very small, the very large and six zeros or more */
	if (x < -4 || x >= 15 || x - k >= 5)
		snprintf(buf, len, "%se%d", m, x);
	else {
		snprintf(buf, len, "%.*f", k - 1 - x > 0 ? k - 1 - x : 0, d);
		if (strchr(buf, '.') == NULL && strlen(buf) + 3 <= len)
			strcat(buf, ".0");
	}
}

static bool
jw_is_table(const json_t *v)
{
	size_t i;
	json_t *e;

	if (!json_is_array(v) || json_array_size(v) == 0)
		return false;
	json_array_foreach(v, i, e)
		if (!json_is_object(e) && !json_is_array(e))
			return false;
	return true;
}

/* v, starting on a line indented by indent; depth 0 is the top level. */
static void
jw_value(jw_out *o, const json_t *v, int indent, int depth)
{
	char buf[64];
	const char *key;
	json_t *e;
	size_t i, n;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		if (json_object_size(v) == 0) {
			jw_puts(o, "{}");
			break;
		}
		jw_puts(o, depth == 0 ? "{\n" : "{");
		i = 0;
		json_object_foreach((json_t *)v, key, e) {
			if (depth == 0) {
				jw_puts(o, i++ > 0 ? ",\n" : "");
				jw_indent(o, indent + 2);
			} else
				jw_puts(o, i++ > 0 ? ", " : "");
			jw_string(o, key, strlen(key));
			jw_puts(o, ": ");
			jw_value(o, e, depth == 0 ? indent + 2 : indent, depth + 1);
		}
		if (depth == 0) {
			jw_puts(o, "\n");
			jw_indent(o, indent);
		}
		jw_puts(o, "}");
		break;
	case JSON_ARRAY:
		n = json_array_size(v);
		if (jw_is_table(v)) {
			jw_puts(o, "[\n");
			json_array_foreach(v, i, e) {
				jw_indent(o, indent + 2);
				jw_value(o, e, indent + 2, depth + 1);
				jw_puts(o, i + 1 < n ? ",\n" : "\n");
			}
			jw_indent(o, indent);
			jw_puts(o, "]");
			break;
		}
		jw_puts(o, "[");
		json_array_foreach(v, i, e) {
			if (i > 0 && n > SL_JSON_ROW && i % SL_JSON_ROW == 0) {
				jw_puts(o, ",\n");
				jw_indent(o, indent + 2);
			} else if (i > 0)
				jw_puts(o, ", ");
			jw_value(o, e, indent, depth + 1);
		}
		jw_puts(o, "]");
		break;
	case JSON_STRING:
		jw_string(o, json_string_value(v), json_string_length(v));
		break;
	case JSON_INTEGER:
		snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT,
		    json_integer_value(v));
		jw_puts(o, buf);
		break;
	case JSON_REAL:
		sl_json_format_real(json_real_value(v), buf, sizeof buf);
		jw_puts(o, buf);
		break;
	case JSON_TRUE:
		jw_puts(o, "true");
		break;
	case JSON_FALSE:
		jw_puts(o, "false");
		break;
	case JSON_NULL:
		jw_puts(o, "null");
		break;
	}
}

int
sl_json_put_string(FILE *fp, const char *s)
{
	jw_out o = { 0 };
	json_t *v = json_string(s);

	if (v == NULL)
		return SL_EINPUT;
	o.fp = fp;
	jw_string(&o, json_string_value(v), json_string_length(v));
	json_decref(v);
	return SL_OK;
}

json_t *
sl_json_real(double d)
{
	return isfinite(d) ? json_real(d) : json_null();
}

json_t *
sl_json_real_digits(double d, int digits)
{
	char buf[40];

	if (!isfinite(d))
		return json_null();
	snprintf(buf, sizeof buf, "%.*e", digits - 1, d);
	return json_real(strtod(buf, NULL));
}

json_t *
sl_json_str(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

char *
sl_json_format(json_t *root)
{
	jw_out o = { 0 };

	if (root == NULL)
		return NULL;
	jw_value(&o, root, 0, 0);
	jw_put(&o, "\n", 1);
	json_decref(root);
	return o.s;
}

int
sl_json_write(json_t *root, const char *path, const char *what,
    sl_error *err)
{
	sl_atomic a;
	jw_out o = { 0 };
	int rc;

	if (root == NULL)
		return sl_error_set(err, SL_EINTERNAL, path, 0, 0, "%s", what);
	if ((rc = sl_atomic_open(&a, path, err)) != SL_OK) {
		json_decref(root);
		return rc;
	}
	o.fp = a.fp;
	jw_value(&o, root, 0, 0);
	jw_put(&o, "\n", 1);
	json_decref(root);
	if (ferror(a.fp)) {
		sl_atomic_abort(&a);
		return sl_error_set(err, SL_EINTERNAL, path, 0, 0, "%s: %s", what,
		    strerror(errno));
	}
	return sl_atomic_commit(&a, err);
}
