/*
 * util.c: errors as values, allocation that never returns NULL, atomic file
 * writes, size and unit formatting, whole-file reads (plain or gzip), sha256.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#ifdef HAVE_MALLOC_H
#include <malloc.h>
#endif
#include <sys/mman.h>
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
sl_setting_name(sl_setting s)
{
	static const char *const names[SL_SET_COUNT] = {
		[SL_SET_NONE] = "",
		[SL_SET_MESH] = N_("mesh"),
		[SL_SET_AXES] = N_("axes"),
		[SL_SET_HW] = N_("hardware profile"),
		[SL_SET_PIN] = N_("pin"),
		[SL_SET_FORBID] = N_("forbid"),
		[SL_SET_SOLVER] = N_("solver"),
		[SL_SET_MEM_LIMIT] = N_("memory budget"),
		[SL_SET_RECOMPUTE] = N_("recomputation"),
		[SL_SET_PP] = N_("pipeline degree"),
		[SL_SET_PLAN] = N_("plan"),
	};

	return (unsigned)s < SL_SET_COUNT && s != SL_SET_NONE ? _(names[s]) : "";
}

int
sl_error_about(sl_error *e, int code, sl_setting s, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (e == NULL || e->code != SL_OK)
		return code;
	e->code = code;
	e->file[0] = '\0';
	e->line = e->column = 0;
	e->about = s;
	n = snprintf(e->msg, sizeof e->msg, "%s ", sl_setting_name(s));
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof e->msg - n, fmt, ap);
	va_end(ap);
	return code;
}

int
sl_error_fix(sl_error *e, sl_setting s, const char *value)
{
	if (e == NULL)
		return SL_EINTERNAL;
	if (e->fix == SL_SET_NONE) {
		e->fix = s;
		snprintf(e->fix_value, sizeof e->fix_value, "%s", value ? value : "");
	}
	return e->code;
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

/* Heap grown at the start and backed by huge pages where the system
 * allows it (sl_tune_allocator). */
#define SL_HEAP_BLOCK ((size_t)48 << 20)
#define SL_HEAP_BLOCKS 8
#if defined(__SANITIZE_ADDRESS__)
#define SL_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SL_SANITIZED 1
#endif
#endif

void
sl_tune_allocator(void)
{
#if defined(HAVE_MALLOPT) && defined(HAVE_MALLOC_H)
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
#if defined(HAVE_MADVISE) && defined(MADV_HUGEPAGE) && !defined(SL_SANITIZED)
	void *b[SL_HEAP_BLOCKS];

	/*
	 * Grow the heap by 384 MiB, which it keeps once freed (under the
	 * trim threshold), and mark it for transparent huge pages: first
	 * touches then fault 2 MiB at a time instead of 4 KiB (the hybrid
	 * search of GPT-3 on 512 devices touches 316 MB; 20k faults become
	 * a few hundred).  Nothing is touched here; where huge pages are
	 * off, madvise fails and this changes nothing.  A sanitizer's
	 * allocator is not glibc's: left alone.
	 */
	for (int i = 0; i < SL_HEAP_BLOCKS; i++) {
		uintptr_t a, e;
		long pg = sysconf(_SC_PAGESIZE);

		if ((b[i] = malloc(SL_HEAP_BLOCK)) == NULL || pg <= 0)
			continue;
		a = ((uintptr_t)b[i] + (uintptr_t)pg - 1) & ~((uintptr_t)pg - 1);
		e = ((uintptr_t)b[i] + SL_HEAP_BLOCK) & ~((uintptr_t)pg - 1);
		if (e > a)
			(void)madvise((void *)a, e - a, MADV_HUGEPAGE);
	}
	for (int i = SL_HEAP_BLOCKS - 1; i >= 0; i--)
		free(b[i]);
#endif
#endif
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

size_t
sl_decimal_len(const char *s)
{
	const char *p = s;
	size_t digits = 0;

	if (*p == '-' || *p == '+')
		p++;
	while (*p >= '0' && *p <= '9')
		p++, digits++;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9')
			p++, digits++;
	}
	if (digits == 0)
		return 0;
	if (*p == 'e' || *p == 'E') {
		const char *q = p + 1;
		if (*q == '-' || *q == '+')
			q++;
		if (*q >= '0' && *q <= '9') {
			while (*q >= '0' && *q <= '9')
				q++;
			p = q;
		}
	}
	return (size_t)(p - s);
}

bool
sl_parse_number(const char *s, double *out)
{
	size_t n;
	char *end;

	if (s == NULL || (n = sl_decimal_len(s)) == 0 || s[n] != '\0')
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return errno == 0 && end == s + n && isfinite(*out);
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

	if (s == NULL || *s == '\0' || sl_decimal_len(s) == 0)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end != s + sl_decimal_len(s) || !isfinite(v) || v < 0)
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

/*
 * Temporary files open now, for sl_atomic_unlink_all in a signal handler:
 * slots are set and cleared by the writer, read by the handler.
 */
static char *volatile sl_tmp_open[16];

static void
sl_tmp_track(char *tmp, bool on)
{
	for (size_t i = 0; i < SL_ARRAY_LEN(sl_tmp_open); i++) {
		if (on && sl_tmp_open[i] == NULL) {
			sl_tmp_open[i] = tmp;
			return;
		}
		if (!on && sl_tmp_open[i] == tmp) {
			sl_tmp_open[i] = NULL;
			return;
		}
	}
}

void
sl_atomic_unlink_all(void)
{
	for (size_t i = 0; i < SL_ARRAY_LEN(sl_tmp_open); i++) {
		char *t = sl_tmp_open[i];
		if (t != NULL)
			(void)unlink(t);
	}
}

/* Frees a and reports e about path; returns the code. */
static int
sl_atomic_fail(sl_atomic *a, sl_error *err, int code, const char *path,
    const char *msg)
{
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof *a);
	return sl_error_set(err, code, path, 0, 0, "%s", msg);
}

/* Opens a character device or a FIFO for writing through, without blocking. */
static int
sl_atomic_through(sl_atomic *a, const char *shown, sl_error *err)
{
	int fd = open(a->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int flags;

	if (fd < 0) {
		char m[512];
		snprintf(m, sizeof m, errno == ENXIO ?
		    _("a FIFO with no reader: nothing to write to") :
		    _("cannot open for writing: %s"), strerror(errno));
		return sl_atomic_fail(a, err, SL_EINTERNAL, shown, m);
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		(void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	if ((a->fp = fdopen(fd, "w")) == NULL) {
		close(fd);
		return sl_atomic_fail(a, err, SL_EINTERNAL, shown, strerror(errno));
	}
	return SL_OK;
}

/* ------------------------------------------------------ inputs, outputs */

/*
 * The files this process has read as inputs (sl_open_input) or a front end
 * has named as such (sl_input_note): sl_output_check refuses to replace
 * any of them, and sl_atomic_open asks it for every file it writes, so
 * that no output of any command or key loses an input it was made from.
 */
static struct sl_input {
	char *path;
} *sl_inputs;
static size_t sl_n_inputs, sl_cap_inputs;
static pthread_mutex_t sl_inputs_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool sl_inputs_guarded;

static void
sl_input_add(const char *path)
{
	pthread_mutex_lock(&sl_inputs_mu);
	for (size_t i = 0; i < sl_n_inputs; i++)
		if (strcmp(sl_inputs[i].path, path) == 0) {
			pthread_mutex_unlock(&sl_inputs_mu);
			return;
		}
	if (sl_n_inputs == sl_cap_inputs) {
		sl_cap_inputs = sl_cap_inputs ? 2 * sl_cap_inputs : 8;
		sl_inputs = sl_xrealloc(sl_inputs, sl_cap_inputs * sizeof *sl_inputs);
	}
	sl_inputs[sl_n_inputs++].path = sl_xstrdup(path);
	pthread_mutex_unlock(&sl_inputs_mu);
}

void
sl_input_note(const char *path)
{
	struct stat st;

	if (path != NULL && strcmp(path, "-") != 0 && stat(path, &st) == 0 &&
	    S_ISREG(st.st_mode))
		sl_input_add(path);
}

void
sl_inputs_guard(bool on)
{
	atomic_store(&sl_inputs_guarded, on);
}

int
sl_output_check(const char *path, const char *what, sl_error *err)
{
	struct stat out, in;
	char *hit = NULL;
	int rc;

	/* nothing there, or standard output: nothing read is replaced */
	if (path == NULL || strcmp(path, "-") == 0 || stat(path, &out) != 0 ||
	    !S_ISREG(out.st_mode))
		return SL_OK;
	pthread_mutex_lock(&sl_inputs_mu);
	for (size_t i = 0; i < sl_n_inputs && hit == NULL; i++)
		/* the file the input's name gives now: a link, a name
		 * resolved, the same file by another name */
		if (stat(sl_inputs[i].path, &in) == 0 &&
		    in.st_dev == out.st_dev && in.st_ino == out.st_ino)
			hit = sl_xstrdup(sl_inputs[i].path);
	pthread_mutex_unlock(&sl_inputs_mu);
	if (hit == NULL)
		return SL_OK;
	if (what != NULL)
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("%s would overwrite an input of the command (%s): choose "
		    "another file"), what, sl_esc(hit));
	else
		rc = sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("this would overwrite an input of the command (%s): choose "
		    "another file"), sl_esc(hit));
	free(hit);
	return rc;
}

int
sl_atomic_open(sl_atomic *a, const char *path, sl_error *err)
{
	struct stat st, lst;
	const char *base, *slash;
	char *real = NULL;
	size_t dirlen, blen;
	bool exists;
	int fd, saved;
	sigset_t all, was;

	memset(a, 0, sizeof *a);
	if (strcmp(path, "-") == 0) {
		a->fp = stdout;
		a->is_stdout = true;
		a->path = sl_xstrdup(path);
		return SL_OK;
	}
	/* replacing an input is refused by rule: bad usage (2), not a file
	 * that cannot be written (3) */
	if (atomic_load(&sl_inputs_guarded) &&
	    sl_output_check(path, NULL, err) != SL_OK)
		return SL_EINPUT;
	/* A symbolic link is followed: its target is replaced, the link stays. */
	if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
		if ((real = realpath(path, NULL)) == NULL)
			return sl_error_set(err, SL_EINTERNAL, path, 0, 0,
			    _("a symbolic link to a missing file: %s"),
			    strerror(errno));
	}
	a->path = real != NULL ? real : sl_xstrdup(path);
	exists = stat(a->path, &st) == 0;
	if (exists && S_ISDIR(st.st_mode))
		return sl_atomic_fail(a, err, SL_EINTERNAL, path,
		    _("is a directory: expected a file name"));
	if (exists && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
		return sl_atomic_through(a, path, err);
	if (exists && !S_ISREG(st.st_mode))
		return sl_atomic_fail(a, err, SL_EINTERNAL, path,
		    _("not a regular file, a character device or a FIFO: refusing to replace it"));
	if (exists && ((st.st_mode & 0222) == 0 || access(a->path, W_OK) != 0))
		return sl_atomic_fail(a, err, SL_EINTERNAL, path,
		    _("the file is read-only: refusing to replace it"));
	if (exists) {
		a->mode = (int)(st.st_mode & 07777);
	} else {
		mode_t mask = umask(0);
		umask(mask);
		a->mode = (int)(0666 & ~mask);
	}
	/*
	 * ".NAME.XXXXXX" beside the file, NAME cut so that the temporary name
	 * stays within NAME_MAX however long the file's own name is.
	 */
	slash = strrchr(a->path, '/');
	base = slash != NULL ? slash + 1 : a->path;
	dirlen = (size_t)(base - a->path);
	blen = strlen(base);
	if (blen > 64)
		blen = 64;
	a->tmp = sl_xmalloc(dirlen + blen + 16);
	snprintf(a->tmp, dirlen + blen + 16, "%.*s.%.*s.XXXXXX", (int)dirlen,
	    a->path, (int)blen, base);
	/*
	 * A signal between creating the file and tracking it would leave the
	 * file behind (the handler unlinks only what is tracked): signals
	 * wait until both are done.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &was);
	fd = mkstemp(a->tmp);
	saved = errno;
	if (fd >= 0)
		sl_tmp_track(a->tmp, true);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (fd < 0) {
		char m[512];
		snprintf(m, sizeof m, _("cannot create a file in its directory: %s"),
		    strerror(saved));
		return sl_atomic_fail(a, err, SL_EINTERNAL, path, m);
	}
	(void)fchmod(fd, (mode_t)a->mode);
	if (exists)
		(void)fchown(fd, st.st_uid, st.st_gid);
	a->fp = fdopen(fd, "w");
	if (a->fp == NULL) {
		close(fd);
		unlink(a->tmp);
		sl_tmp_track(a->tmp, false);
		return sl_atomic_fail(a, err, SL_EINTERNAL, path, strerror(errno));
	}
	return SL_OK;
}

const char *
sl_atomic_tmp(const sl_atomic *a)
{
	return a->tmp;
}

int
sl_atomic_commit(sl_atomic *a, sl_error *err)
{
	int rc = SL_OK;

	if (a->is_stdout) {
		if (fflush(stdout) != 0 || ferror(stdout))
			rc = sl_error_set(err, SL_EINTERNAL, "-", 0, 0,
			    _("cannot write to standard output: %s"), strerror(errno));
	} else {
		bool bad = ferror(a->fp) != 0;
		int e = 0;
		if (!bad && fflush(a->fp) != 0)
			bad = true;
		if (!bad && a->tmp != NULL && fsync(fileno(a->fp)) != 0)
			bad = true;
		e = errno;
		if (fclose(a->fp) != 0 && !bad) {
			bad = true;
			e = errno;
		}
		if (bad) {
			if (a->tmp != NULL)
				unlink(a->tmp);
			rc = sl_error_set(err, SL_EINTERNAL, a->path, 0, 0,
			    _("cannot write the file: %s"), strerror(e ? e : EIO));
		} else if (a->tmp != NULL && rename(a->tmp, a->path) != 0) {
			e = errno;
			unlink(a->tmp);
			rc = sl_error_set(err, SL_EINTERNAL, a->path, 0, 0,
			    _("cannot replace the file: %s"), strerror(e));
		}
		sl_tmp_track(a->tmp, false);
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
		if (a->tmp != NULL)
			unlink(a->tmp);
		sl_tmp_track(a->tmp, false);
	}
	free(a->path);
	free(a->tmp);
	memset(a, 0, sizeof *a);
}

int64_t
sl_max_input(void)
{
	const char *e = getenv("SHARDLAB_MAX_INPUT");
	int64_t v;

	if (e == NULL || *e == '\0')
		return SL_MAX_INPUT_DEFAULT;
	/* a limit the user meant is never replaced by another one */
	if ((v = sl_parse_size(e)) <= 0 || v > SL_MAX_INPUT_MAX)
		return -1;
	return v;
}

int
sl_max_input_check(sl_error *err)
{
	char b[32];

	if (sl_max_input() > 0)
		return SL_OK;
	return sl_error_set(err, SL_EINPUT, NULL, 0, 0,
	    _("SHARDLAB_MAX_INPUT: expected a size from 1 byte to %s such as "
	    "64MiB or 2GB, got '%s'"), sl_format_bytes(SL_MAX_INPUT_MAX, b,
	    sizeof b), sl_esc(getenv("SHARDLAB_MAX_INPUT")));
}

int
sl_open_input(const char *path, sl_error *err)
{
	struct stat st;
	int fd, flags;

	if (sl_max_input_check(err) != SL_OK)
		return -1;
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("cannot open: %s"), strerror(errno)), -1;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sl_error_set(err, SL_EINPUT, path, 0, 0, "%s",
		    S_ISDIR(st.st_mode) ? _("is a directory: expected a file") :
		    _("not a regular file (a device, FIFO or socket): expected a file")), -1;
	}
	/* what is read is never replaced by an output (sl_output_check) */
	sl_input_add(path);
	if (st.st_size > sl_max_input()) {
		char b1[32], b2[32];
		close(fd);
		return sl_error_set(err, SL_EINPUT, path, 0, 0,
		    _("the file is too large: %s, at most %s (SHARDLAB_MAX_INPUT)"),
		    sl_format_bytes(st.st_size, b1, sizeof b1),
		    sl_format_bytes(sl_max_input(), b2, sizeof b2)), -1;
	}
	flags = fcntl(fd, F_GETFL);
	if (flags >= 0)
		(void)fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
	return fd;
}

static const char *
sl_esc_into(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t o = 0;

	if (len == 0)
		return buf;
	while (*p != '\0') {
		char piece[16];
		size_t n = 0, k = 1;
		unsigned c = *p;

		if (c >= 0x80) {
			/* a valid UTF-8 sequence passes, except C1 controls */
			unsigned need = c >= 0xf0 && c < 0xf5 ? 4 : c >= 0xe0 ? 3 :
			    c >= 0xc2 && c < 0xe0 ? 2 : 0;
			if (c >= 0xf5)
				need = 0;
			k = need;
			/* stops at the first byte that does not continue it (NUL) */
			for (unsigned i = 1; i < need; i++)
				if ((p[i] & 0xc0) != 0x80) {
					k = 0;
					break;
				}
			if (k == 3 && ((c == 0xe0 && p[1] < 0xa0) ||
			    (c == 0xed && p[1] >= 0xa0)))
				k = 0;
			if (k == 4 && ((c == 0xf0 && p[1] < 0x90) ||
			    (c == 0xf4 && p[1] >= 0x90)))
				k = 0;
			if (k == 2 && c == 0xc2 && p[1] < 0xa0)
				k = 0;
		}
		if (c < 0x20 || c == 0x7f || k == 0) {
			n = (size_t)snprintf(piece, sizeof piece, "\\x%02x", c);
			k = 1;
		} else {
			memcpy(piece, p, k);
			n = k;
		}
		if (o + n + 4 > len) {
			if (len >= 4) {
				if (o + 3 >= len)
					o = len - 4;
				memcpy(buf + o, "...", 3);
				o += 3;
			}
			break;
		}
		memcpy(buf + o, piece, n);
		o += n;
		p += k;
	}
	buf[o < len ? o : len - 1] = '\0';
	return buf;
}

const char *
sl_esc_buf(const char *s, char *buf, size_t len)
{
	return sl_esc_into(s, buf, len);
}

const char *
sl_esc(const char *s)
{
	static _Thread_local char ring[8][4096];
	static _Thread_local int next;
	char *b = ring[next];

	next = (next + 1) % 8;
	return sl_esc_into(s, b, sizeof ring[0]);
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
sl_read_file(const char *path, size_t *len, sl_error *err)
{
	size_t cap = 1 << 16, n = 0;
	int64_t max = sl_max_input();
	unsigned char magic[2];
	bool gz;
	char *buf;
	int fd;

	if ((fd = sl_open_input(path, err)) < 0)
		return NULL;
	/* gzip by its magic bytes (RFC 1952), whatever the file's name */
	gz = pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
	if (gz) {
		gzFile f = gzdopen(fd, "rb");
		if (f == NULL) {
			close(fd);
			return sl_error_set(err, SL_EINPUT, path, 0, 0,
			    _("cannot open: %s"), strerror(errno)), NULL;
		}
		buf = sl_xmalloc(cap + 1);
		for (;;) {
			int r;
			if (n == cap) {
				if ((int64_t)n > max) {
					char b[32];
					sl_error_set(err, SL_EINPUT, path, 0, 0,
					    _("the file inflates to more than %s (SHARDLAB_MAX_INPUT): refusing to read it"),
					    sl_format_bytes(max, b, sizeof b));
					gzclose(f);
					free(buf);
					return NULL;
				}
				cap = (int64_t)(cap * 2) > max + 1 ? (size_t)max + 1 : cap * 2;
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
		buf = sl_xmalloc(cap + 1);
		for (;;) {
			ssize_t r;
			if (n == cap) {
				if ((int64_t)n > max) {
					char b[32];
					sl_error_set(err, SL_EINPUT, path, 0, 0,
					    _("the file is too large: more than %s (SHARDLAB_MAX_INPUT)"),
					    sl_format_bytes(max, b, sizeof b));
					close(fd);
					free(buf);
					return NULL;
				}
				cap *= 2;
				buf = sl_xrealloc(buf, cap + 1);
			}
			r = read(fd, buf + n, cap - n);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				sl_error_set(err, SL_EINPUT, path, 0, 0,
				    _("cannot read: %s"), strerror(errno));
				close(fd);
				free(buf);
				return NULL;
			}
			if (r == 0)
				break;
			n += (size_t)r;
		}
		close(fd);
	}
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

/* FNV-1a, 64 bits. */
static uint64_t
sl_names_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static void
sl_names_put(sl_names *h, const char *key, int val)
{
	size_t i = (size_t)sl_names_hash(key) & (h->cap - 1);

	while (h->key[i] != NULL) {
		if (strcmp(h->key[i], key) == 0) {
			h->val[i] = val;
			return;
		}
		i = (i + 1) & (h->cap - 1);
	}
	h->key[i] = key;
	h->val[i] = val;
	h->n++;
}

void
sl_names_add(sl_names *h, const char *key, int val)
{
	if (2 * (h->n + 1) > h->cap) {
		sl_names old = *h;
		h->cap = old.cap ? 2 * old.cap : 64;
		h->n = 0;
		h->key = sl_xcalloc(h->cap, sizeof *h->key);
		h->val = sl_xcalloc(h->cap, sizeof *h->val);
		for (size_t i = 0; i < old.cap; i++)
			if (old.key[i] != NULL)
				sl_names_put(h, old.key[i], old.val[i]);
		free(old.key);
		free(old.val);
	}
	sl_names_put(h, key, val);
}

int
sl_names_get(const sl_names *h, const char *key)
{
	size_t i;

	if (h == NULL || h->cap == 0 || key == NULL)
		return -1;
	i = (size_t)sl_names_hash(key) & (h->cap - 1);
	while (h->key[i] != NULL) {
		if (strcmp(h->key[i], key) == 0)
			return h->val[i];
		i = (i + 1) & (h->cap - 1);
	}
	return -1;
}

void
sl_names_free(sl_names *h)
{
	if (h == NULL)
		return;
	free(h->key);
	free(h->val);
	memset(h, 0, sizeof *h);
}
