/*
 * util.c: errors as values, allocation that never returns NULL, atomic file
 * writes, size and unit formatting, whole-file reads (plain or gzip), sha256.
 */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <nettle/sha2.h>

void
sl_error_clear(sl_error *e)
{
	if (e != NULL)
		memset(e, 0, sizeof *e);
}

int
sl_error_set(sl_error *e, int code, const char *file, int line, int col,
    const char *fmt, ...)
{
	va_list ap;

	if (e == NULL || e->code != SL_OK)
		return code;
	e->code = code;
	snprintf(e->file, sizeof e->file, "%s", file ? file : "");
	e->line = line;
	e->column = col;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return code;
}

const char *
sl_error_format(const sl_error *e, char *buf, size_t len)
{
	if (e->file[0] != '\0' && e->line > 0 && e->column > 0)
		snprintf(buf, len, "%s:%d:%d: %s", e->file, e->line, e->column, e->msg);
	else if (e->file[0] != '\0' && e->line > 0)
		snprintf(buf, len, "%s:%d: %s", e->file, e->line, e->msg);
	else if (e->file[0] != '\0')
		snprintf(buf, len, "%s: %s", e->file, e->msg);
	else
		snprintf(buf, len, "%s", e->msg);
	return buf;
}

static void
sl_oom(void)
{
	fputs("shardlab: out of memory\n", stderr);
	abort();
}

void *
sl_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (p == NULL)
		sl_oom();
	return p;
}

void *
sl_xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (p == NULL)
		sl_oom();
	return p;
}

void *
sl_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		sl_oom();
	return p;
}

char *
sl_xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (d == NULL)
		sl_oom();
	return d;
}

int64_t
sl_parse_size(const char *s)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{ "", 1 }, { "B", 1 },
		{ "KiB", 1024.0 }, { "MiB", 1048576.0 }, { "GiB", 1073741824.0 },
		{ "TiB", 1099511627776.0 },
		{ "KB", 1e3 }, { "MB", 1e6 }, { "GB", 1e9 }, { "TB", 1e12 },
		{ "K", 1024.0 }, { "M", 1048576.0 }, { "G", 1073741824.0 },
		{ "T", 1099511627776.0 },
	};
	char *end;
	double v;

	if (s == NULL || *s == '\0')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v) || v < 0)
		return -1;
	while (*end == ' ')
		end++;
	for (size_t i = 0; i < SL_ARRAY_LEN(units); i++) {
		if (strcasecmp(end, units[i].suffix) == 0 &&
		    (strcmp(end, units[i].suffix) == 0 || i < 2 || 1)) {
			double b = v * units[i].mult;
			if (b >= 9.2e18)
				return -1;
			return (int64_t)llround(b);
		}
	}
	return -1;
}

const char *
sl_format_bytes(int64_t bytes, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double v = (double)(bytes < 0 ? -bytes : bytes);
	int u = 0;

	while (v >= 1024.0 && u < 5) {
		v /= 1024.0;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%s%lld B", bytes < 0 ? "-" : "",
		    (long long)(bytes < 0 ? -bytes : bytes));
	else
		snprintf(buf, len, "%s%.2f %s", bytes < 0 ? "-" : "", v, unit[u]);
	return buf;
}

const char *
sl_format_ns(int64_t ns, char *buf, size_t len)
{
	double v = (double)ns;

	if (ns < 1000)
		snprintf(buf, len, "%lld ns", (long long)ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.2f us", v / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2f ms", v / 1e6);
	else
		snprintf(buf, len, "%.2f s", v / 1e9);
	return buf;
}

const char *
sl_format_rate(double v, char *buf, size_t len)
{
	if (!(v >= 0) || !isfinite(v))
		snprintf(buf, len, "-");
	else if (v < 1e3)
		snprintf(buf, len, "%.0f", v);
	else if (v < 1e6)
		snprintf(buf, len, "%.1fk", v / 1e3);
	else if (v < 1e9)
		snprintf(buf, len, "%.2fM", v / 1e6);
	else
		snprintf(buf, len, "%.2fG", v / 1e9);
	return buf;
}

int
sl_atomic_open(sl_atomic *a, const char *path, sl_error *err)
{
	int fd;

	memset(a, 0, sizeof *a);
	if (strcmp(path, "-") == 0) {
		a->fp = stdout;
		a->is_stdout = true;
		a->path = sl_xstrdup(path);
		return SL_OK;
	}
	a->path = sl_xstrdup(path);
	a->tmp = sl_xmalloc(strlen(path) + 16);
	sprintf(a->tmp, "%s.tmpXXXXXX", path);
	fd = mkstemp(a->tmp);
	if (fd < 0) {
		int e = errno;
		free(a->path);
		free(a->tmp);
		memset(a, 0, sizeof *a);
		return sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("cannot create a file in its directory: %s"), strerror(e));
	}
	{
		/* mkstemp makes 0600; give the file what a plain open would. */
		mode_t mask = umask(0);
		umask(mask);
		(void)fchmod(fd, 0666 & ~mask);
	}
	a->fp = fdopen(fd, "w");
	if (a->fp == NULL) {
		close(fd);
		unlink(a->tmp);
		return sl_error_set(err, SL_EINTERNAL, path, 0, 0, "fdopen: %s",
		    strerror(errno));
	}
	return SL_OK;
}

int
sl_atomic_commit(sl_atomic *a, sl_error *err)
{
	int rc = SL_OK;

	if (a->is_stdout) {
		if (fflush(stdout) != 0)
			rc = sl_error_set(err, SL_EINTERNAL, "-", 0, 0,
			    _("cannot write to standard output: %s"), strerror(errno));
	} else {
		bool bad = ferror(a->fp) != 0;
		if (fflush(a->fp) != 0 || fsync(fileno(a->fp)) != 0)
			bad = true;
		if (fclose(a->fp) != 0)
			bad = true;
		if (bad) {
			unlink(a->tmp);
			rc = sl_error_set(err, SL_EINTERNAL, a->path, 0, 0,
			    _("cannot write the file: %s"), strerror(errno));
		} else if (rename(a->tmp, a->path) != 0) {
			unlink(a->tmp);
			rc = sl_error_set(err, SL_EINPUT, a->path, 0, 0,
			    _("cannot replace the file: %s"), strerror(errno));
		}
	}
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof *a);
	return rc;
}

void
sl_atomic_abort(sl_atomic *a)
{
	if (a->fp != NULL && !a->is_stdout) {
		fclose(a->fp);
		unlink(a->tmp);
	}
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof *a);
}

bool
sl_beside_program(char *buf, size_t len, const char *name)
{
	char self[4096], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

	if (n <= 0)
		return false;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return false;
	*slash = '\0';
	return (size_t)snprintf(buf, len, "%s/%s", self, name) < len;
}

/* Whether dir holds the bundled data (its hardware profiles). */
static bool
sl_is_datadir(const char *dir)
{
	char p[4096];

	return (size_t)snprintf(p, sizeof p, "%s/hardware", dir) < sizeof p &&
	    access(p, R_OK | X_OK) == 0;
}

/*
 * $SHARDLAB_DATADIR when set; else the installed data directory; else, for
 * a program run from its build tree before `make install`, data/ beside the
 * executable or in the source tree it was built from.
 */
const char *
sl_datadir(void)
{
	static _Thread_local char buf[4096];
	const char *d = getenv("SHARDLAB_DATADIR");

	if (d != NULL && *d != '\0')
		return d;
#ifdef DATADIR
	if (sl_is_datadir(DATADIR))
		return DATADIR;
#endif
	if (sl_beside_program(buf, sizeof buf, "data") && sl_is_datadir(buf))
		return buf;
#ifdef SRCDATADIR
	if (sl_is_datadir(SRCDATADIR))
		return SRCDATADIR;
#endif
#ifdef DATADIR
	return DATADIR;
#else
	return "data";
#endif
}

/* Whether dir holds a catalogue of this program (any language). */
static bool
sl_is_localedir(const char *dir)
{
	static const char *const lang[] = { "de", "zh_CN" };
	char p[4096];
	size_t i;

	for (i = 0; i < SL_ARRAY_LEN(lang); i++)
		if ((size_t)snprintf(p, sizeof p, "%s/%s/LC_MESSAGES/%s.mo", dir,
		    lang[i], PACKAGE) < sizeof p && access(p, R_OK) == 0)
			return true;
	return false;
}

const char *
sl_localedir(void)
{
	static char buf[4096];
	const char *env = getenv("SHARDLAB_LOCALEDIR");

	if (env != NULL && env[0] != '\0')
		return env;
#ifdef LOCALEDIR
	if (sl_is_localedir(LOCALEDIR))
		return LOCALEDIR;
#endif
	if (sl_beside_program(buf, sizeof buf, "locale") && sl_is_localedir(buf))
		return buf;
#ifdef BUILDLOCALEDIR
	if (sl_is_localedir(BUILDLOCALEDIR))
		return BUILDLOCALEDIR;
#endif
#ifdef LOCALEDIR
	return LOCALEDIR;
#else
	return "locale";
#endif
}

void
sl_sha256_hex(const void *data, size_t len, char out[65])
{
	struct sha256_ctx ctx;
	uint8_t digest[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof digest, digest);
	for (int i = 0; i < SHA256_DIGEST_SIZE; i++)
		sprintf(out + 2 * i, "%02x", digest[i]);
	out[64] = '\0';
}

char *
sl_read_file(const char *path, size_t *len, bool gz, sl_error *err)
{
	size_t cap = 1 << 16, n = 0;
	char *buf;

	if (gz) {
		gzFile f = gzopen(path, "rb");
		if (f == NULL)
			return sl_error_set(err, SL_EINPUT, path, 0, 0,
			    _("cannot open: %s"), strerror(errno)), NULL;
		buf = sl_xmalloc(cap + 1);
		for (;;) {
			int r;
			if (n == cap) {
				cap *= 2;
				buf = sl_xrealloc(buf, cap + 1);
			}
			r = gzread(f, buf + n, (unsigned)(cap - n));
			if (r < 0) {
				int e;
				const char *m = gzerror(f, &e);
				sl_error_set(err, SL_EINPUT, path, 0, 0,
				    _("cannot decompress: %s"), m);
				gzclose(f);
				free(buf);
				return NULL;
			}
			if (r == 0)
				break;
			n += (size_t)r;
		}
		gzclose(f);
	} else {
		FILE *f = fopen(path, "rb");
		if (f == NULL)
			return sl_error_set(err, SL_EINPUT, path, 0, 0,
			    _("cannot open: %s"), strerror(errno)), NULL;
		buf = sl_xmalloc(cap + 1);
		for (;;) {
			size_t r;
			if (n == cap) {
				cap *= 2;
				buf = sl_xrealloc(buf, cap + 1);
			}
			r = fread(buf + n, 1, cap - n, f);
			n += r;
			if (r == 0)
				break;
		}
		if (ferror(f)) {
			sl_error_set(err, SL_EINPUT, path, 0, 0,
			    _("cannot read: %s"), strerror(errno));
			fclose(f);
			free(buf);
			return NULL;
		}
		fclose(f);
	}
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}
