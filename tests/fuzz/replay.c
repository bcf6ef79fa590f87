/*
 * replay.c: every fuzz target's corpus replayed by `make check`, with no
 * libFuzzer: each input of tests/fuzz/corpus/NAME is read into a buffer of
 * exactly its size and handed once to fuzz_NAME.c's entry point, as
 * libFuzzer hands it.  The sanitizer build (.ci/test) runs the same program
 * under ASan, UBSan and LeakSanitizer, so an input that once found a fault
 * keeps guarding against it.  Each target's file is included here with its
 * entry point renamed; the command line's and the explorer's targets need
 * the program's sources, which this program links with its main renamed
 * (Makefile.am), as the libFuzzer targets do.
 *
 * A target whose corpus is missing or empty fails: the replay would prove
 * nothing.  When an input crashes, the file being replayed is named on
 * standard error before the process dies.
 */
#include "fuzz_common.h"

#define LLVMFuzzerTestOneInput fuzz_model_one
#include "fuzz_model.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_file_one
#include "fuzz_file.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_hf_one
#include "fuzz_hf.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_plan_one
#include "fuzz_plan.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_cli_one
#include "fuzz_cli.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_vresult_one
#include "fuzz_vresult.c"
#undef LLVMFuzzerTestOneInput
#define LLVMFuzzerTestOneInput fuzz_keys_one
#include "fuzz_keys.c"
#undef LLVMFuzzerTestOneInput

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The program's sources are built with main renamed (Makefile.am). */
#undef main

/* libFuzzer's default -max_len is 4096; the corpora stay far below this. */
#define REPLAY_MAX_INPUT (1 << 20)

static const struct {
	const char *name;
	int (*one)(const uint8_t *data, size_t size);
} targets[] = {
	{ "model", fuzz_model_one }, { "file", fuzz_file_one },
	{ "hf", fuzz_hf_one }, { "plan", fuzz_plan_one },
	{ "cli", fuzz_cli_one }, { "vresult", fuzz_vresult_one },
	{ "keys", fuzz_keys_one },
};

/* The input being replayed, for the crash handler. */
static char current[4096];

static void
on_fatal(int sig)
{
	static const char what[] = "replay: died on ";

	(void)!write(STDERR_FILENO, what, sizeof what - 1);
	(void)!write(STDERR_FILENO, current, strlen(current));
	(void)!write(STDERR_FILENO, "\n", 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Reads a regular file of at most REPLAY_MAX_INPUT bytes; NULL on error. */
static uint8_t *
read_input(const char *path, size_t *size)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *buf;
	struct stat st;

	if (fp == NULL)
		return NULL;
	if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > REPLAY_MAX_INPUT) {
		fclose(fp);
		return NULL;
	}
	*size = (size_t)st.st_size;
	/* exactly the input's bytes, as libFuzzer gives them: reading one
	 * past the end is a fault the sanitizers see */
	buf = malloc(*size ? *size : 1);
	if (buf == NULL || fread(buf, 1, *size, fp) != *size) {
		free(buf);
		fclose(fp);
		return NULL;
	}
	fclose(fp);
	return buf;
}

static int
no_dots(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Replays one target's corpus; returns the inputs replayed, -1 on error. */
static int
replay(const char *dir, const char *name, int (*one)(const uint8_t *, size_t))
{
	struct dirent **ent;
	char path[2048];
	int n, done = 0;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((n = scandir(path, &ent, no_dots, alphasort)) < 0) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		uint8_t *data;
		size_t size;

		snprintf(current, sizeof current, "%s/%s/%s", dir, name,
		    ent[i]->d_name);
		if ((data = read_input(current, &size)) == NULL) {
			fprintf(stderr, "replay: cannot read %s (a regular file of "
			    "at most %d bytes)\n", current, REPLAY_MAX_INPUT);
			done = -1;
		} else {
			one(data, size);
			free(data);
			if (done >= 0)
				done++;
		}
		free(ent[i]);
	}
	free(ent);
	return done;
}

int
main(void)
{
	const char *src = getenv("TESTS_SRCDIR");
	static const int fatal[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL };
	char dir[1024];
	int rc = 0;

	if (src == NULL || *src == '\0') {
		printf("SKIP: TESTS_SRCDIR is not set: the corpus cannot be found\n");
		return 77;
	}
	snprintf(dir, sizeof dir, "%s/fuzz/corpus", src);
	for (size_t i = 0; i < sizeof fatal / sizeof *fatal; i++)
		signal(fatal[i], on_fatal);
	for (size_t t = 0; t < sizeof targets / sizeof *targets; t++) {
		int n = replay(dir, targets[t].name, targets[t].one);

		if (n <= 0) {
			printf("FAIL: fuzz_%s: %s\n", targets[t].name, n < 0 ?
			    "its corpus could not be read" : "its corpus is empty");
			rc = 1;
		} else
			printf("fuzz_%s: %d inputs replayed\n", targets[t].name, n);
		fflush(stdout);
	}
	/* what fuzz_plan.c keeps for every input */
	if (sp != NULL)
		sl_space_free(sp);
	if (g != NULL)
		sl_graph_free(g);
	return rc;
}
