/*
 * test_plan.c: hardware profiles, meshes, collective times, and the plan
 * file (write, read back, map onto a space; atomic replacement).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

static char tmpdir[256];

static void
write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static char *
tmp_path(const char *name)
{
	static char buf[512];

	snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
	return buf;
}

/* Names in a directory other than . and .. (for "no temporary file left"). */
static int
count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/* ------------------------------------------------------------- profiles */

static void
test_hw_bundled(void **state)
{
	const char *const *names = sl_bundled_hardware();
	int n = 0;

	for (; names[n] != NULL; n++) {
		sl_hw hw;
		sl_error err;
		char buf[1200];

		sl_error_clear(&err);
		if (sl_hw_load(names[n], &hw, &err) != SL_OK)
			fail_msg("%s: %s", names[n],
			    sl_error_format(&err, buf, sizeof buf));
		assert_string_equal(hw.name, names[n]);
		assert_true(hw.memory_bytes > 0);
		assert_true(hw.flops > 0);
		assert_true(hw.devices_per_node >= 1);
		assert_true(hw.intra.bandwidth > 0);
		assert_true(hw.inter.bandwidth > 0);
		assert_true(hw.device[0] != '\0');
		/*
		 * What the step's terms need of every card (issue 24 item
		 * 3): its matmul table and where it comes from, a runtime
		 * reserve below the driver's total, FP8 rates where the card
		 * has FP8 tensor cores (Ada, Hopper, Blackwell: every bundled
		 * card but the A100s and the V100), the host link and CPU
		 * Adam of its own.
		 */
		assert_true(hw.n_gemm >= 20);
		for (int i = 1; i < hw.n_gemm; i++)
			assert_true(hw.gemm[i].flops > hw.gemm[i - 1].flops);
		for (int i = 0; i < hw.n_gemm; i++)
			assert_true(hw.gemm[i].achieved > 0 && hw.gemm[i].achieved <= hw.flops);
		assert_true(strstr(hw.description, "doc/cost-model.md") != NULL ||
		    strstr(hw.description, "measured") != NULL);
		assert_true(hw.reserve_bytes > 0);
		assert_true(hw.capacity_bytes == hw.memory_bytes + hw.reserve_bytes);
		if (strncmp(names[n], "a100", 4) == 0 ||
		    strncmp(names[n], "v100", 4) == 0)
			assert_true(hw.fp8_flops == 0);
		else
			assert_true(hw.fp8_flops >= 1.9 * hw.flops &&
			    hw.fp8_flops <= 2.1 * hw.flops);
		assert_true(hw.host.bandwidth > 0 && hw.host.latency > 0);
		assert_true(hw.host_adam > 0);
	}
	assert_true(n >= 12);

	/* one H100 SXM node: 80 GB HBM3, NVLink 4 450 GB/s per direction */
	sl_hw hw;
	sl_error err;
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("h100-nvlink", &hw, &err), SL_OK);
	/* 79.18 GiB as the driver reports it, 3 GiB of it left to the runtime */
	assert_true(hw.capacity_bytes == 85018542080LL);
	assert_true(hw.reserve_bytes == 3221225472LL);
	assert_true(hw.memory_bytes == 85018542080LL - 3221225472LL);
	assert_true(hw.fp8_flops == 1979e12);
	assert_true(hw.host.bandwidth == 40e9 && hw.host_adam == 2.05e9);
	assert_true(hw.intra.bandwidth == 450e9);
	assert_true(hw.intra.latency == 3e-6);
	assert_true(hw.inter.bandwidth == 50e9);
	assert_true(hw.flops == 989e12);
	assert_int_equal(hw.devices_per_node, 8);

	/*
	 * The cards people have, at their datasheets' figures: the memory the
	 * driver reports (nvidia-smi's total in MiB where no GPU was measured;
	 * the H100 PCIe reports the SXM's), dense bf16 peak (half the "with
	 * sparsity" figure), the link between the devices of a node per
	 * direction and the node size.
	 */
	static const struct {
		const char *name, *source;
		int64_t memory;
		double flops, intra;
		int per_node;
	} cards[] = {
		{ "rtx4090-pcie", "whitepaper", 24564LL << 20, 165.2e12, 12.5e9, 4 },
		{ "l4-pcie", "L4 datasheet", 23034LL << 20, 121e12, 25e9, 8 },
		{ "l40s-pcie", "L40S datasheet", 46068LL << 20, 362.05e12, 25e9, 8 },
		{ "a100-40gb-sxm", "A100 datasheet", 40960LL << 20, 312e12, 300e9, 8 },
		{ "h100-pcie", "H100 datasheet", 85018542080LL, 756e12, 50e9, 8 },
		{ "h200-nvlink", "H200", 150109880320LL, 989e12, 450e9, 8 },
		{ "b200-nvlink", "B200 datasheet", 183359LL << 20, 2250e12, 900e9, 8 },
	};
	for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
		bool listed = false;

		sl_error_clear(&err);
		assert_int_equal(sl_hw_load(cards[i].name, &hw, &err), SL_OK);
		assert_true(hw.capacity_bytes == cards[i].memory);
		assert_true(hw.memory_bytes == hw.capacity_bytes - hw.reserve_bytes);
		assert_true(hw.flops == cards[i].flops);
		assert_true(hw.intra.bandwidth == cards[i].intra);
		assert_int_equal(hw.devices_per_node, cards[i].per_node);
		/* estimated compute stays under the peaks it is derived from */
		assert_true(hw.attention_flops <= hw.flops);
		assert_true(hw.mem_bandwidth > 0);
		if (strstr(hw.description, cards[i].source) == NULL)
			fail_msg("%s: the description does not name its source "
			    "(%s): %s", cards[i].name, cards[i].source,
			    hw.description);
		for (int k = 0; names[k] != NULL; k++)
			listed |= strcmp(names[k], cards[i].name) == 0;
		assert_true(listed);
	}
	/* consumer cards have no NVLink: PCIe peers, slower than any NVLink */
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("rtx4090-pcie", &hw, &err), SL_OK);
	assert_non_null(strstr(hw.description, "no NVLink"));

	/* by path as well as by name */
	char path[1024];
	snprintf(path, sizeof path, "%s/hardware/a100-pcie.json", sl_datadir());
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load(path, &hw, &err), SL_OK);
	assert_string_equal(hw.name, "a100-pcie");
	assert_true(hw.intra.bandwidth == 25e9);
}

static const char *const base_profile[] = {
	"{",
	"  \"format\": \"shardlab-hardware\",",
	"  \"version\": 1,",
	"  \"name\": \"test\",",
	"  \"device\": {\"name\": \"gpu\", \"memory_bytes\": 4e10, \"flops\": 1e12},",
	"  \"devices_per_node\": 4,",
	"  \"intra_node\": {\"bandwidth\": 1e9, \"latency\": 1e-6},",
	"  \"inter_node\": {\"bandwidth\": 1e8, \"latency\": 1e-5}",
	"}",
};

/* The base profile with line `line` (1-based) replaced by repl (NULL: dropped). */
static void
profile_with(char *out, size_t len, int line, const char *repl)
{
	out[0] = '\0';
	for (size_t i = 0; i < sizeof base_profile / sizeof *base_profile; i++) {
		const char *l = (int)i + 1 == line ? repl : base_profile[i];
		if (l == NULL)
			continue;
		strncat(out, l, len - strlen(out) - 2);
		strcat(out, "\n");
	}
}

/*
 * The memory plans may use: the device's less the runtime's reserve, 3 GiB
 * unless the profile says (a quarter of a small device); every report says
 * all three.
 */
static void
test_hw_reserve(void **state)
{
	char text[2048], buf[128];
	sl_hw hw, back;
	sl_error err;
	char *p = tmp_path("reserve.json");

	profile_with(text, sizeof text, 0, NULL);
	write_text(p, text, strlen(text));
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load(p, &hw, &err), SL_OK);
	assert_true(hw.capacity_bytes == 40000000000LL);
	assert_true(hw.reserve_bytes == 3LL << 30);
	assert_true(hw.memory_bytes == 40000000000LL - (3LL << 30));
	assert_string_equal(sl_hw_memory_text(&hw, buf, sizeof buf),
	    "usable 34.25 GiB of 37.25 GiB (reserve 3.00 GiB)");
	/* nothing about the host: PCIe 4.0 and a DGX A100's memory assumed */
	assert_true(sl_hw_host_link(&hw).bandwidth == 25e9);
	assert_true(fabs(sl_hw_host_adam(&hw) - 300e9 / 8 / 28) < 1);

	/* a reserve of its own, and a device under 12 GiB */
	profile_with(text, sizeof text, 5, "  \"device\": {\"name\": \"gpu\", "
	    "\"memory_bytes\": 4e10, \"reserve_bytes\": 1e9, \"flops\": 1e12},");
	write_text(p, text, strlen(text));
	assert_int_equal(sl_hw_load(p, &hw, &err), SL_OK);
	assert_true(hw.memory_bytes == 39000000000LL && hw.reserve_bytes == 1000000000LL);
	/* written and read back, the same three */
	assert_int_equal(sl_hw_write(&hw, p, &err), SL_OK);
	assert_int_equal(sl_hw_load(p, &back, &err), SL_OK);
	assert_true(back.capacity_bytes == hw.capacity_bytes &&
	    back.reserve_bytes == hw.reserve_bytes &&
	    back.memory_bytes == hw.memory_bytes);
	profile_with(text, sizeof text, 5, "  \"device\": {\"name\": \"gpu\", "
	    "\"memory_bytes\": 8e9, \"flops\": 1e12},");
	write_text(p, text, strlen(text));
	assert_int_equal(sl_hw_load(p, &hw, &err), SL_OK);
	assert_true(hw.reserve_bytes == 2000000000LL);
	assert_true(hw.memory_bytes == 6000000000LL);
}

static void
test_hw_bad(void **state)
{
	static const struct {
		int line;
		const char *repl;
		int want_line, want_col;	/* -1: any positive */
		const char *want;
	} cases[] = {
		/* syntax: missing comma after the version line */
		{ 3, "  \"version\": 1", 4, -1, "JSON" },
		{ 2, "  \"format\": \"shardlab-model\",", 2, 13, "shardlab-hardware" },
		{ 3, "  \"version\": 2,", 3, 14, "version" },
		{ 4, "  \"name\": 7,", 4, 11, "name" },
		{ 4, "  \"name\": \"a\", \"name\": \"b\",", 4, -1, "JSON" },
		{ 5, "  \"device\": {\"name\": \"gpu\", \"flops\": 1e12},", 5, 13,
		    "memory_bytes" },
		{ 5, "  \"device\": {\"name\": \"gpu\", \"memory_bytes\": 1.5, "
		    "\"flops\": 1e12},", 5, 45, "whole" },
		{ 6, "  \"devices_per_nod\": 4,", 6, 22, "devices_per_nod" },
		{ 7, "  \"intra_node\": {\"bandwidth\": -1e9, \"latency\": 1e-6},",
		    7, 31, "bandwidth" },
		{ 8, "  \"inter_node\": {\"bandwidth\": 1e8, \"latency\": \"fast\"}",
		    8, 47, "latency" },
	};
	char text[2048], buf[1400];

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		sl_hw hw;
		sl_error err;
		char *p = tmp_path("bad.json");

		profile_with(text, sizeof text, cases[i].line, cases[i].repl);
		write_text(p, text, strlen(text));
		sl_error_clear(&err);
		assert_int_equal(sl_hw_load(p, &hw, &err), SL_EINPUT);
		sl_error_format(&err, buf, sizeof buf);
		if (err.line != cases[i].want_line ||
		    (cases[i].want_col >= 0 && err.column != cases[i].want_col) ||
		    err.column <= 0 || strstr(err.msg, cases[i].want) == NULL ||
		    strcmp(err.file, p) != 0)
			fail_msg("case %zu: got \"%s\", want line %d col %d "
			    "mentioning \"%s\"", i, buf, cases[i].want_line,
			    cases[i].want_col, cases[i].want);
	}

	/* not an object, empty, binary, missing */
	static const struct { const char *text; size_t len; const char *want; }
	    whole[] = {
		{ "[1, 2]\n", 7, "shardlab-hardware" },
		{ "", 0, "empty" },
		{ "\x7f" "ELF\x00\x01\x02", 7, "binary" },
	};
	for (size_t i = 0; i < sizeof whole / sizeof *whole; i++) {
		sl_hw hw;
		sl_error err;
		char *p = tmp_path("bad.json");

		write_text(p, whole[i].text, whole[i].len);
		sl_error_clear(&err);
		assert_int_equal(sl_hw_load(p, &hw, &err), SL_EINPUT);
		if (strstr(err.msg, whole[i].want) == NULL)
			fail_msg("whole %zu: %s", i, err.msg);
	}

	sl_hw hw;
	sl_error err;
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load("no-such-gpu", &hw, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "no-such-gpu"));
	assert_non_null(strstr(err.msg, "h100-nvlink"));	/* lists bundled */
	sl_error_clear(&err);
	assert_int_equal(sl_hw_load(tmp_path("absent.json"), &hw, &err),
	    SL_EINPUT);
	assert_string_equal(err.file, tmp_path("absent.json"));
}

/* ----------------------------------------------------------------- mesh */

static void
test_mesh_parse(void **state)
{
	static const struct { const char *s; int n, a, b; } good[] = {
		{ "8", 1, 8, 1 }, { "2x4", 2, 2, 4 }, { "1x8", 2, 1, 8 },
		{ "4X2", 2, 4, 2 }, { "65536", 1, 65536, 1 },
		{ "256x256", 2, 256, 256 }, { "1", 1, 1, 1 },
	};
	static const struct { const char *s, *want; } bad[] = {
		{ "0", "0 devices" }, { "2x0", "0 devices" },
		{ "-2", "negative" }, { "2x-4", "negative" },
		{ "abc", "AxB" }, { "", "empty" }, { "2x", "AxB" },
		{ "x4", "AxB" }, { "8 ", "AxB" }, { "2*4", "AxB" },
		{ "2x3x4", "at most 2 axes" }, { "65537", "65536" },
		{ "300x300", "65536" }, { "99999999999999999999", "65536" },
	};

	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		int n = 0, shape[SL_MAX_AXES] = { 0, 0 };
		sl_error err;

		sl_error_clear(&err);
		assert_int_equal(sl_mesh_parse(good[i].s, &n, shape, &err), SL_OK);
		assert_int_equal(n, good[i].n);
		assert_int_equal(shape[0], good[i].a);
		if (n == 2)
			assert_int_equal(shape[1], good[i].b);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		int n = 0, shape[SL_MAX_AXES];
		sl_error err;

		sl_error_clear(&err);
		assert_int_equal(sl_mesh_parse(bad[i].s, &n, shape, &err),
		    SL_EINPUT);
		if (strstr(err.msg, bad[i].want) == NULL)
			fail_msg("\"%s\": %s (want \"%s\")", bad[i].s, err.msg,
			    bad[i].want);
	}
}

static void
load_hw(const char *name, sl_hw *hw)
{
	sl_error err;

	sl_error_clear(&err);
	if (sl_hw_load(name, hw, &err) != SL_OK)
		fail_msg("%s: %s", name, err.msg);
}

static void
test_mesh_make(void **state)
{
	sl_hw nv, ib;
	sl_mesh m;
	sl_error err;
	int shape[SL_MAX_AXES];

	load_hw("h100-nvlink", &nv);
	load_hw("h100-2node-ib", &ib);

	/* 8 on one node: NVLink */
	shape[0] = 8;
	sl_error_clear(&err);
	assert_int_equal(sl_mesh_make(&nv, 1, shape, &m, &err), SL_OK);
	assert_int_equal(m.n_devices, 8);
	assert_int_equal(m.axes[0].size, 8);
	assert_true(m.axes[0].link.bandwidth == 450e9);
	assert_true(m.axes[0].link.latency == 3e-6);
	assert_true(m.hw.memory_bytes == nv.memory_bytes);

	/* 2x8 on two nodes: axis 0 crosses nodes (IB), axis 1 inside (NVLink) */
	shape[0] = 2;
	shape[1] = 8;
	assert_int_equal(sl_mesh_make(&ib, 2, shape, &m, &err), SL_OK);
	assert_int_equal(m.n_devices, 16);
	assert_true(m.axes[0].link.bandwidth == 50e9);
	assert_true(m.axes[0].link.latency == 5e-6);
	assert_true(m.axes[1].link.bandwidth == 450e9);

	/* 2x4 fits one node: both NVLink */
	shape[0] = 2;
	shape[1] = 4;
	assert_int_equal(sl_mesh_make(&nv, 2, shape, &m, &err), SL_OK);
	assert_true(m.axes[0].link.bandwidth == 450e9);
	assert_true(m.axes[1].link.bandwidth == 450e9);

	/* 4x4: inner groups of 4 stay inside a node of 8, outer crosses */
	shape[0] = 4;
	shape[1] = 4;
	assert_int_equal(sl_mesh_make(&ib, 2, shape, &m, &err), SL_OK);
	assert_true(m.axes[0].link.bandwidth == 50e9);
	assert_true(m.axes[1].link.bandwidth == 450e9);

	/* 16 in one ring spans two nodes: IB */
	shape[0] = 16;
	assert_int_equal(sl_mesh_make(&ib, 1, shape, &m, &err), SL_OK);
	assert_true(m.axes[0].link.bandwidth == 50e9);

	/* 3x3 on nodes of 8: group {6,7,8} straddles a node boundary */
	shape[0] = 3;
	shape[1] = 3;
	assert_int_equal(sl_mesh_make(&ib, 2, shape, &m, &err), SL_OK);
	assert_true(m.axes[1].link.bandwidth == 50e9);
	assert_true(m.axes[0].link.bandwidth == 50e9);

	/* a profile with no inter-node link cannot hold a mesh beyond a node */
	char text[2048];
	sl_hw one;
	profile_with(text, sizeof text, 8, NULL);
	/* drop the trailing comma of the intra_node line */
	char *c = strstr(text, "1e-6},");
	assert_non_null(c);
	memmove(c + 5, c + 6, strlen(c + 6) + 1);
	write_text(tmp_path("one.json"), text, strlen(text));
	load_hw(tmp_path("one.json"), &one);
	assert_true(one.inter.bandwidth == 0);
	shape[0] = 4;
	assert_int_equal(sl_mesh_make(&one, 1, shape, &m, &err), SL_OK);
	shape[0] = 8;
	sl_error_clear(&err);
	assert_int_equal(sl_mesh_make(&one, 1, shape, &m, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "inter-node"));

	shape[0] = 0;
	sl_error_clear(&err);
	assert_int_equal(sl_mesh_make(&nv, 1, shape, &m, &err), SL_EINPUT);
	sl_error_clear(&err);
	assert_int_equal(sl_mesh_make(&nv, 3, shape, &m, &err), SL_EINPUT);
}

static void
test_mesh_coords(void **state)
{
	sl_hw ib;
	sl_mesh m;
	sl_error err;
	int shape[SL_MAX_AXES] = { 2, 4 }, c[SL_MAX_AXES];

	load_hw("h100-2node-ib", &ib);
	sl_error_clear(&err);
	assert_int_equal(sl_mesh_make(&ib, 2, shape, &m, &err), SL_OK);
	sl_mesh_coords(&m, 5, c);
	assert_int_equal(c[0], 1);
	assert_int_equal(c[1], 1);
	sl_mesh_coords(&m, 3, c);
	assert_int_equal(c[0], 0);
	assert_int_equal(c[1], 3);
	for (int d = 0; d < m.n_devices; d++) {
		sl_mesh_coords(&m, d, c);
		assert_int_equal(c[0] * 4 + c[1], d);
	}
	shape[0] = 8;
	assert_int_equal(sl_mesh_make(&ib, 1, shape, &m, &err), SL_OK);
	sl_mesh_coords(&m, 6, c);
	assert_int_equal(c[0], 6);
	assert_int_equal(c[1], 0);
}

/* ---------------------------------------------------------- collectives */

static void
test_coll_time(void **state)
{
	sl_link l = { 1e9, 1e-6 };		/* 1 GB/s, 1 us */
	sl_link nv = { 450e9, 3e-6 };		/* NVLink 4 */
	sl_link dead = { 0, 1e-6 };

	assert_string_equal(sl_coll_name(SL_COLL_ALL_REDUCE), "all-reduce");
	assert_string_equal(sl_coll_name(SL_COLL_ALL_GATHER), "all-gather");
	assert_string_equal(sl_coll_name(SL_COLL_REDUCE_SCATTER),
	    "reduce-scatter");
	assert_string_equal(sl_coll_name(SL_COLL_ALL_TO_ALL), "all-to-all");

	/*
	 * n = 4, B = 4e6 bytes, beta = 1e9 B/s, lambda = 1 us:
	 * all-reduce 2*3/4 * 4e6/1e9 s = 6 ms, + 2*3*1 us = 6 us -> 6,006,000 ns
	 * all-gather 3/4 * 4e6/1e9 s = 3 ms, + 3 us -> 3,003,000 ns
	 * all-to-all 3/16 * 4e6/1e9 s = 750 us, + 3 us -> 753,000 ns
	 */
	assert_true(sl_coll_time(SL_COLL_ALL_REDUCE, 4, 4000000, &l) == 6006000);
	assert_true(sl_coll_time(SL_COLL_ALL_GATHER, 4, 4000000, &l) == 3003000);
	assert_true(sl_coll_time(SL_COLL_REDUCE_SCATTER, 4, 4000000, &l) ==
	    3003000);
	assert_true(sl_coll_time(SL_COLL_ALL_TO_ALL, 4, 4000000, &l) == 753000);

	/*
	 * n = 8, B = 1e9 bytes on NVLink (450e9 B/s, 3 us):
	 * all-reduce 1.75e9/450e9 s = 3,888,888.89 ns + 14*3 us = 42,000 ns
	 *   -> 3,930,888.89 -> 3,930,889
	 * all-gather 0.875e9/450e9 s = 1,944,444.44 ns + 21,000 -> 1,965,444
	 * all-to-all 0.109375e9/450e9 s = 243,055.56 ns + 21,000 -> 264,056
	 */
	assert_true(sl_coll_time(SL_COLL_ALL_REDUCE, 8, 1000000000, &nv) ==
	    3930889);
	assert_true(sl_coll_time(SL_COLL_ALL_GATHER, 8, 1000000000, &nv) ==
	    1965444);
	assert_true(sl_coll_time(SL_COLL_ALL_TO_ALL, 8, 1000000000, &nv) ==
	    264056);

	/* n = 2 all-reduce of 1000 bytes: 1000/1e9 s = 1 us + 2 us -> 3,000 */
	assert_true(sl_coll_time(SL_COLL_ALL_REDUCE, 2, 1000, &l) == 3000);

	/* one device, nothing to move: free */
	assert_true(sl_coll_time(SL_COLL_ALL_REDUCE, 1, 4000000, &l) == 0);
	assert_true(sl_coll_time(SL_COLL_ALL_REDUCE, 0, 4000000, &l) == 0);
	assert_true(sl_coll_time(SL_COLL_ALL_GATHER, 4, 0, &l) == 0);
	/* saturates instead of wrapping */
	sl_link slow = { 1, 1 };
	assert_true(sl_coll_time(SL_COLL_ALL_REDUCE, 8, INT64_MAX, &slow) ==
	    INT64_MAX);
	assert_true(sl_coll_time(SL_COLL_ALL_GATHER, 4, 1000, &dead) ==
	    INT64_MAX);
}

/* ------------------------------------------------------------------ plans */

typedef struct fixture {
	sl_graph *g;
	sl_space *s;
	int *choice;
	sl_eval ev;
	bool have_ev;
} fixture;

/*
 * The two-layer MLP built by hand, x[8,16] w1[16,64] -> gelu -> w2[64,16]:
 * used when the bundled model cannot be opened, so that the plan file is
 * tested on its own.
 */
static sl_graph *
mlp_by_hand(sl_error *err)
{
	sl_graph *g = sl_graph_new("mlp-2layer");
	int64_t x[] = { 8, 16 }, w1[] = { 16, 64 }, h[] = { 8, 64 },
	    w2[] = { 64, 16 };
	int tx, tw1, th, ta, tw2, ty, in[2], out[1];

	tx = sl_graph_add_tensor(g, "x", 2, x, SL_DT_BF16, SL_ROLE_INPUT, err);
	tw1 = sl_graph_add_tensor(g, "w1", 2, w1, SL_DT_BF16,
	    SL_ROLE_PARAMETER, err);
	th = sl_graph_add_tensor(g, "h", 2, h, SL_DT_BF16, SL_ROLE_ACTIVATION,
	    err);
	ta = sl_graph_add_tensor(g, "a", 2, h, SL_DT_BF16, SL_ROLE_ACTIVATION,
	    err);
	tw2 = sl_graph_add_tensor(g, "w2", 2, w2, SL_DT_BF16,
	    SL_ROLE_PARAMETER, err);
	ty = sl_graph_add_tensor(g, "y", 2, x, SL_DT_BF16, SL_ROLE_ACTIVATION,
	    err);
	in[0] = tx, in[1] = tw1, out[0] = th;
	sl_graph_add_op(g, "fc1", SL_OP_MATMUL, 2, in, 1, out, NULL, err);
	in[0] = th, out[0] = ta;
	sl_graph_add_op(g, "act", SL_OP_GELU, 1, in, 1, out, NULL, err);
	in[0] = ta, in[1] = tw2, out[0] = ty;
	sl_graph_add_op(g, "fc2", SL_OP_MATMUL, 2, in, 1, out, NULL, err);
	if (err->code != SL_OK || sl_graph_validate(g, NULL, err) != SL_OK) {
		sl_graph_free(g);
		return NULL;
	}
	return g;
}

/* mlp-2layer on a mesh of h100-nvlink; false when the engine cannot yet. */
static bool
fixture_open(fixture *f, int n_axes, const int *shape, char *why, size_t len)
{
	sl_model_opts mo = { .micro_batch = 1, .devices = 1 };
	sl_space_opts so = { .zero = true };
	sl_error err;
	sl_hw hw;
	sl_mesh m;

	memset(f, 0, sizeof *f);
	for (int a = 0; a < n_axes; a++)
		mo.devices *= shape[a];
	load_hw("h100-nvlink", &hw);
	sl_error_clear(&err);
	assert_int_equal(sl_mesh_make(&hw, n_axes, shape, &m, &err), SL_OK);
	f->g = sl_model_open("mlp-2layer", &mo, &err);
	if (f->g == NULL) {
		fprintf(stderr, "note: bundled mlp-2layer: %s; built by hand\n",
		    err.msg);
		sl_error_clear(&err);
		if ((f->g = mlp_by_hand(&err)) == NULL) {
			snprintf(why, len, "model: %s", err.msg);
			return false;
		}
	}
	f->s = sl_space_build(f->g, &m, &so, &err);
	if (f->s == NULL) {
		snprintf(why, len, "strategy space: %s", err.msg);
		return false;
	}
	f->choice = calloc((size_t)f->g->n_ops, sizeof *f->choice);
	/* a varied assignment: strategy i mod k of operator i */
	for (int i = 0; i < f->g->n_ops; i++)
		f->choice[i] = i % f->s->ops[i].n_strat;
	if (sl_evaluate(f->s, f->choice, 0.1, &f->ev, &err) != SL_OK) {
		snprintf(why, len, "evaluator: %s", err.msg);
		return false;
	}
	f->have_ev = true;
	return true;
}

static void
fixture_close(fixture *f)
{
	if (f->have_ev)
		sl_eval_free(&f->ev);
	free(f->choice);
	sl_space_free(f->s);
	sl_graph_free(f->g);
}

#define FIXTURE_OR_SKIP(f, n, shape) do {				\
	char why_[1200];						\
	if (!fixture_open(f, n, shape, why_, sizeof why_)) {		\
		fprintf(stderr, "skipped: %s\n", why_);			\
		fixture_close(f);					\
		skip();							\
	}								\
} while (0)

static int64_t
jint(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("\"%s\" is not an integer", key);
	return json_integer_value(v);
}

/*
 * The layout (json.c): a top-level member per line, a device, an
 * operator and each of its tensors on a line of its own, alpha in its
 * shortest exact form and the time to the microsecond.
 */
static void
check_plan_layout(const char *path, const sl_graph *g)
{
	FILE *fp = fopen(path, "r");
	char line[4096];
	int n_ops = 0, n_tensors = 0, n_devices = 0, slots = 0;
	bool alpha = false, time = false;

	assert_non_null(fp);
	while (fgets(line, sizeof line, fp) != NULL) {
#define STARTS(l, p) (strncmp((l), (p), sizeof (p) - 1) == 0)
		n_ops += STARTS(line, "    {\"name\": ");
		n_tensors += STARTS(line, "      {\"name\": ");
		n_devices += STARTS(line, "    {\"id\": ");
#undef STARTS
		alpha |= strcmp(line, "  \"alpha\": 0.1,\n") == 0;
		time |= strstr(line, "\"time_ms\": 1.25, ") != NULL;
	}
	fclose(fp);
	for (int i = 0; i < g->n_ops; i++)
		slots += g->ops[i].n_in + g->ops[i].n_out;
	assert_int_equal(n_ops, g->n_ops);
	assert_int_equal(n_tensors, slots);
	assert_int_equal(n_devices, 4);
	assert_true(alpha);
	assert_true(time);
}

/* The numbers in the file are the evaluator's; forbid is the one forbidden
 * strategy of the last operator (NULL none). */
static void
check_plan_numbers(const char *path, const fixture *f, const char *forbid)
{
	const sl_graph *g = f->g;
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);

	if (root == NULL)
		fail_msg("plan is not JSON: %d:%d: %s", je.line, je.column, je.text);
	assert_string_equal(json_string_value(json_object_get(root, "format")),
	    "shardlab-plan");
	assert_int_equal(jint(root, "version"), 1);
	assert_true(json_real_value(json_object_get(root, "alpha")) == 0.1);
	assert_true(jint(root, "objective") == f->ev.objective);
	assert_true(jint(root, "redundant_bytes") == f->ev.redundant);
	assert_true(jint(root, "comm_time_ns") == f->ev.comm_ns);
	assert_true(jint(root, "max_memory_bytes") == f->ev.max_total);
	json_t *model = json_object_get(root, "model");
	assert_true(jint(model, "parameters") == sl_graph_param_count(g));
	assert_int_equal(jint(model, "micro_batch"), 1);
	if (g->sha256[0] != '\0')
		assert_string_equal(json_string_value(json_object_get(model,
		    "sha256")), g->sha256);
	else
		assert_true(json_is_null(json_object_get(model, "sha256")));
	json_t *devs = json_object_get(root, "devices");
	assert_int_equal(json_array_size(devs), 4);
	for (int d = 0; d < 4; d++) {
		json_t *dv = json_array_get(devs, (size_t)d);
		json_t *mem = json_object_get(dv, "memory_bytes");
		json_t *co = json_object_get(dv, "coords");
		assert_int_equal(jint(dv, "id"), d);
		assert_int_equal(json_integer_value(json_array_get(co, 0)), d / 2);
		assert_int_equal(json_integer_value(json_array_get(co, 1)), d % 2);
		assert_true(jint(mem, "total") == sl_mem_total(&f->ev.dev[d]));
		assert_true(jint(mem, "parameters") == f->ev.dev[d].params);
		assert_true(jint(mem, "optimizer") == f->ev.dev[d].optim);
		assert_true(jint(mem, "activations") == f->ev.dev[d].acts);
		assert_true(jint(mem, "parameters") + jint(mem, "gradients") +
		    jint(mem, "optimizer") + jint(mem, "activations") +
		    jint(mem, "buffers") == jint(mem, "total"));
	}
	json_t *comm = json_object_get(root, "comm");
	int64_t sum = 0;
	for (int k = 0; k < SL_COLL_COUNT; k++)
		sum += jint(json_object_get(comm, sl_coll_name((sl_coll)k)),
		    "time_ns");
	assert_true(sum == f->ev.comm_ns);
	json_t *ops = json_object_get(root, "ops");
	assert_int_equal(json_array_size(ops), g->n_ops);
	json_t *o0 = json_array_get(ops, 0);
	assert_true(json_is_true(json_object_get(o0, "pinned")));
	json_t *t0 = json_array_get(json_object_get(o0, "tensors"), 0);
	int ti = g->ops[0].in[0];
	assert_int_equal(json_array_size(json_object_get(t0, "shape")),
	    g->tensors[ti].rank);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(t0,
	    "shape"), 0)), g->tensors[ti].dims[0]);
	if (forbid != NULL) {
		json_t *fb = json_object_get(json_array_get(ops,
		    (size_t)g->n_ops - 1), "forbidden");
		assert_int_equal(json_array_size(fb), 1);
		assert_string_equal(json_string_value(json_array_get(fb, 0)),
		    forbid);
	}
	json_decref(root);
}

/* Read back, the plan maps onto the same space with the same objective. */
static void
check_plan_readback(const char *path, const fixture *f, const sl_constraints *cs,
    const char *op0, const char *st0)
{
	const sl_graph *g = f->g;
	sl_plan_file pf;
	sl_error err;

	sl_error_clear(&err);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	assert_string_equal(pf.model, g->name);
	assert_string_equal(pf.model_source, "mlp-2layer");
	assert_string_equal(pf.hardware, "h100-nvlink");
	assert_int_equal(pf.n_axes, 2);
	assert_int_equal(pf.shape[0], 2);
	assert_int_equal(pf.shape[1], 2);
	assert_true(pf.alpha == 0.1);
	assert_true(pf.micro_batch == 1);
	assert_true(pf.has_recipe);
	assert_int_equal(pf.recipe.framework, SL_FW_FREE);
	assert_int_equal(pf.n_ops, g->n_ops);
	assert_true(pf.pinned[0]);
	assert_int_equal(pf.cs.n, cs->n);
	assert_true(pf.cs.c[0].pin);
	assert_string_equal(pf.cs.c[0].op, op0);
	assert_string_equal(pf.cs.c[0].strategy, st0);
	int *back = calloc((size_t)g->n_ops, sizeof *back);
	assert_int_equal(sl_plan_choice(f->s, &pf, back, &err), SL_OK);
	assert_memory_equal(back, f->choice, (size_t)g->n_ops * sizeof *back);

	/* the same plan re-evaluated gives the same objective */
	sl_eval ev2;
	assert_int_equal(sl_evaluate(f->s, back, pf.alpha, &ev2, &err), SL_OK);
	assert_true(ev2.objective == f->ev.objective);
	sl_eval_free(&ev2);
	free(back);
	sl_plan_file_free(&pf);
}

static void
test_plan_roundtrip(void **state)
{
	int shape[SL_MAX_AXES] = { 2, 2 };
	fixture f;
	sl_constraints cs = { 0 };
	sl_solution sol;
	sl_error err;
	char dir[512], path[600];

	FIXTURE_OR_SKIP(&f, 2, shape);
	snprintf(dir, sizeof dir, "%s/rt", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/plan.json", dir);
	const sl_graph *g = f.g;
	const char *op0 = g->ops[0].name;
	const char *st0 = f.s->ops[0].strat[f.choice[0]].name;
	const char *forbid = f.s->ops[g->n_ops - 1].n_strat > 1 ?
	    f.s->ops[g->n_ops - 1].strat[(f.choice[g->n_ops - 1] + 1) %
	    f.s->ops[g->n_ops - 1].n_strat].name : NULL;

	sl_constraints_add(&cs, op0, st0, true);
	if (forbid != NULL)
		sl_constraints_add(&cs, g->ops[g->n_ops - 1].name, forbid, false);
	sl_solution_init(&sol, g->n_ops);
	sol.objective = f.ev.objective;
	sol.status = SL_SOLVE_OPTIMAL;
	sol.solver = SL_SOLVER_DP;
	sol.time_ms = 1.2500004;	/* written to the microsecond */
	snprintf(sol.note, sizeof sol.note, "a \"quoted\" note");
	sl_plan_meta meta = { .model_source = "mlp-2layer", .alpha = 0.1,
	    .sol = &sol, .cs = &cs, .micro_batch = 1 };

	sl_error_clear(&err);
	assert_int_equal(sl_plan_write(f.s, f.choice, &f.ev, &meta, path, &err),
	    SL_OK);
	assert_int_equal(count_entries(dir), 1);

	check_plan_layout(path, g);
	check_plan_numbers(path, &f, forbid);
	check_plan_readback(path, &f, &cs, op0, st0);

	sl_solution_free(&sol);
	sl_constraints_free(&cs);
	fixture_close(&f);
	unlink(path);
	rmdir(dir);
}

static void
test_plan_choice_errors(void **state)
{
	int shape[SL_MAX_AXES] = { 4, 1 };
	fixture f;
	sl_plan_file pf;
	sl_error err;
	char text[4096], *path = tmp_path("p.json");
	int *choice;

	FIXTURE_OR_SKIP(&f, 1, shape);
	const char *op0 = f.g->ops[0].name;
	choice = calloc((size_t)f.g->n_ops, sizeof *choice);

	/* a plan for another mesh */
	snprintf(text, sizeof text, "{\"format\": \"shardlab-plan\", "
	    "\"version\": 1,\n \"model\": {\"name\": \"m\"},\n \"mesh\": "
	    "{\"shape\": [2, 4]},\n \"ops\": [{\"name\": \"%s\", "
	    "\"strategy\": \"dp\"}]}\n", op0);
	write_text(path, text, strlen(text));
	sl_error_clear(&err);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	sl_error_clear(&err);
	assert_int_equal(sl_plan_choice(f.s, &pf, choice, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "2x4"));
	sl_plan_file_free(&pf);

	/* an operator the model does not have, on line 4 */
	snprintf(text, sizeof text, "{\"format\": \"shardlab-plan\", "
	    "\"version\": 1,\n \"model\": {\"name\": \"m\"},\n \"mesh\": "
	    "{\"shape\": [4]},\n \"ops\": [{\"name\": \"nope\", "
	    "\"strategy\": \"dp\"}]}\n");
	write_text(path, text, strlen(text));
	sl_error_clear(&err);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	sl_error_clear(&err);
	assert_int_equal(sl_plan_choice(f.s, &pf, choice, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "\"nope\""));
	assert_int_equal(err.line, 4);
	/* ` "ops": [{"name": "nope", "strategy": ` puts the value at 39 */
	assert_int_equal(err.column, 39);
	sl_plan_file_free(&pf);

	/* a strategy the operator does not have */
	snprintf(text, sizeof text, "{\"format\": \"shardlab-plan\", "
	    "\"version\": 1,\n \"model\": {\"name\": \"m\"},\n \"mesh\": "
	    "{\"shape\": [4]},\n \"ops\": [{\"name\": \"%s\", "
	    "\"strategy\": \"warp9\"}]}\n", op0);
	write_text(path, text, strlen(text));
	sl_error_clear(&err);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	sl_error_clear(&err);
	assert_int_equal(sl_plan_choice(f.s, &pf, choice, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "warp9"));
	assert_non_null(strstr(err.msg, f.s->ops[0].strat[0].name));
	assert_int_equal(err.line, 4);
	sl_plan_file_free(&pf);

	/* a plan that leaves operators out (unless the model has one) */
	if (f.g->n_ops > 1) {
		snprintf(text, sizeof text, "{\"format\": \"shardlab-plan\", "
		    "\"version\": 1, \"model\": {\"name\": \"m\"}, \"mesh\": "
		    "{\"shape\": [4]}, \"ops\": [{\"name\": \"%s\", "
		    "\"strategy\": \"%s\"}]}\n", op0, f.s->ops[0].strat[0].name);
		write_text(path, text, strlen(text));
		sl_error_clear(&err);
		assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
		sl_error_clear(&err);
		assert_int_equal(sl_plan_choice(f.s, &pf, choice, &err),
		    SL_EINPUT);
		assert_non_null(strstr(err.msg, f.g->ops[1].name));
		sl_plan_file_free(&pf);
	}
	free(choice);
	fixture_close(&f);
	unlink(path);
}

static void
test_plan_read_bad(void **state)
{
	static const struct {
		const char *text;
		int line, col;		/* col -1: any positive */
		const char *want;
	} cases[] = {
		{ "{\"format\": \"shardlab-plan\",\n \"version\": 1,,\n}", 2, -1,
		    "JSON" },
		{ "{\"format\": \"shardlab-model\", \"version\": 1}", 1, 12,
		    "not a shardlab plan" },
		{ "{\"format\": \"shardlab-plan\",\n \"version\": 2}", 2, 13,
		    "version" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"model\": {\"name\": \"m\"},\n"
		  " \"mesh\": {\"shape\": [2, 0]},\n"
		  " \"ops\": []}", 3, 24, "mesh axis" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"model\": {\"name\": \"m\"},\n"
		  " \"mesh\": {\"shape\": [2, 2, 2]},\n"
		  " \"ops\": []}", 3, 20, "1 or 2" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"model\": {\"name\": \"m\"},\n"
		  " \"mesh\": {\"shape\": [4]},\n"
		  " \"ops\": [{\"name\": \"a\", \"strategy\": \"dp\"},\n"
		  "         {\"name\": \"b\"}]}", 5, 10, "strategy" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"model\": {\"name\": \"m\"},\n"
		  " \"mesh\": {\"shape\": [4]},\n"
		  " \"ops\": [{\"name\": \"a\", \"strategy\": \"dp\"},\n"
		  "         {\"name\": \"a\", \"strategy\": \"col\"}]}", 5, 10,
		  "twice" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"model\": {\"name\": \"m\"},\n"
		  " \"mesh\": {\"shape\": [4]},\n"
		  " \"constraints\": [{\"op\": \"a\", \"strategy\": \"dp\", "
		  "\"kind\": \"maybe\"}],\n"
		  " \"ops\": []}", 4, 56, "maybe" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"model\": {\"name\": \"m\"},\n"
		  " \"mesh\": {\"shape\": [4]},\n"
		  " \"alpha\": -1,\n"
		  " \"ops\": []}", 4, 11, "alpha" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"mesh\": {\"shape\": [4]},\n"
		  " \"ops\": []}", 1, 1, "model" },
		{ "{\"format\": \"shardlab-plan\", \"version\": 1,\n"
		  " \"model\": {\"name\": \"m\"},\n"
		  " \"mesh\": {\"shape\": [4]},\n"
		  " \"recipe\": {\"framework\": \"jax\"},\n"
		  " \"ops\": []}", 4, 26,
		  "megatron, torchtitan, deepspeed, free" },
	};
	char *path = tmp_path("bad-plan.json"), buf[1400];

	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		sl_plan_file pf;
		sl_error err;

		write_text(path, cases[i].text, strlen(cases[i].text));
		sl_error_clear(&err);
		assert_int_equal(sl_plan_read(path, &pf, &err), SL_EINPUT);
		sl_error_format(&err, buf, sizeof buf);
		if (err.line != cases[i].line ||
		    (cases[i].col >= 0 && err.column != cases[i].col) ||
		    err.column <= 0 || strstr(err.msg, cases[i].want) == NULL)
			fail_msg("case %zu: got \"%s\", want %d:%d \"%s\"", i,
			    buf, cases[i].line, cases[i].col, cases[i].want);
		/* a failed read leaves nothing to free */
		assert_null(pf.op_name);
		assert_null(pf.model);
	}
	sl_plan_file pf;
	sl_error err;
	write_text(path, "", 0);
	sl_error_clear(&err);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_EINPUT);
	assert_non_null(strstr(err.msg, "empty"));
	unlink(path);
	sl_error_clear(&err);
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_EINPUT);
	assert_string_equal(err.file, path);
}

static void
test_plan_atomic(void **state)
{
	int shape[SL_MAX_AXES] = { 2, 1 };
	fixture f;
	sl_error err;
	sl_plan_meta meta = { .alpha = 0 };
	char dir[512], *path, old[64];

	FIXTURE_OR_SKIP(&f, 1, shape);
	snprintf(dir, sizeof dir, "%s/atomic", tmpdir);
	assert_int_equal(mkdir(dir, 0700), 0);
	path = sl_xmalloc(strlen(dir) + 16);
	sprintf(path, "%s/plan.json", dir);

	/* replaces an existing file; nothing else is left in the directory */
	write_text(path, "old contents\n", 13);
	sl_error_clear(&err);
	assert_int_equal(sl_plan_write(f.s, f.choice, &f.ev, &meta, path, &err),
	    SL_OK);
	assert_int_equal(count_entries(dir), 1);
	sl_plan_file pf;
	assert_int_equal(sl_plan_read(path, &pf, &err), SL_OK);
	sl_plan_file_free(&pf);

	/* an invalid assignment is refused before the file is touched */
	write_text(path, "old contents\n", 13);
	int saved = f.choice[0];
	f.choice[0] = f.s->ops[0].n_strat;
	sl_error_clear(&err);
	assert_int_not_equal(sl_plan_write(f.s, f.choice, &f.ev, &meta, path,
	    &err), SL_OK);
	f.choice[0] = saved;
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	assert_non_null(fgets(old, sizeof old, fp));
	fclose(fp);
	assert_string_equal(old, "old contents\n");
	assert_int_equal(count_entries(dir), 1);

	/* the target cannot be replaced (it is a directory): no temporary left */
	char sub[600];
	snprintf(sub, sizeof sub, "%s/sub", dir);
	assert_int_equal(mkdir(sub, 0700), 0);
	sl_error_clear(&err);
	assert_int_not_equal(sl_plan_write(f.s, f.choice, &f.ev, &meta, sub,
	    &err), SL_OK);
	assert_int_equal(count_entries(dir), 2);
	assert_int_equal(count_entries(sub), 0);
	rmdir(sub);

	/* a directory that does not exist: nothing is created, and the file
	 * cannot be written (status 3, as a full disk) */
	char missing[600];
	snprintf(missing, sizeof missing, "%s/none/plan.json", dir);
	sl_error_clear(&err);
	assert_int_equal(sl_plan_write(f.s, f.choice, &f.ev, &meta, missing,
	    &err), SL_EINTERNAL);
	assert_int_equal(count_entries(dir), 1);

	/* an unwritable directory (root may write anywhere: only then skipped) */
	if (geteuid() != 0) {
		write_text(path, "old contents\n", 13);
		assert_int_equal(chmod(dir, 0500), 0);
		sl_error_clear(&err);
		assert_int_equal(sl_plan_write(f.s, f.choice, &f.ev, &meta,
		    path, &err), SL_EINTERNAL);
		assert_int_equal(chmod(dir, 0700), 0);
		fp = fopen(path, "r");
		assert_non_null(fp);
		assert_non_null(fgets(old, sizeof old, fp));
		fclose(fp);
		assert_string_equal(old, "old contents\n");
		assert_int_equal(count_entries(dir), 1);
	}
	/* "-" is standard output: the whole plan, no file anywhere */
	char out[600];
	snprintf(out, sizeof out, "%s/stdout.json", dir);
	fflush(stdout);
	int saved_fd = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(saved_fd >= 0 && fd >= 0);
	assert_int_equal(dup2(fd, 1), 1);
	close(fd);
	sl_error_clear(&err);
	int wrc = sl_plan_write(f.s, f.choice, &f.ev, &meta, "-", &err);
	fflush(stdout);
	dup2(saved_fd, 1);
	close(saved_fd);
	assert_int_equal(wrc, SL_OK);
	json_error_t je;
	json_t *root = json_load_file(out, 0, &je);
	assert_non_null(root);
	assert_int_equal(json_array_size(json_object_get(root, "ops")),
	    f.g->n_ops);
	json_decref(root);
	assert_int_equal(count_entries(dir), 2);	/* plan.json, stdout.json */
	unlink(out);

	unlink(path);
	rmdir(dir);
	free(path);
	fixture_close(&f);
}

static int
rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	chmod(path, 0700);
	return remove(path) != 0 && errno != ENOENT;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hw_bundled),
		cmocka_unit_test(test_hw_reserve),
		cmocka_unit_test(test_hw_bad),
		cmocka_unit_test(test_mesh_parse),
		cmocka_unit_test(test_mesh_make),
		cmocka_unit_test(test_mesh_coords),
		cmocka_unit_test(test_coll_time),
		cmocka_unit_test(test_plan_read_bad),
		cmocka_unit_test(test_plan_roundtrip),
		cmocka_unit_test(test_plan_choice_errors),
		cmocka_unit_test(test_plan_atomic),
	};
	char datadir[1024];
	int rc;

	/* run by hand, find the source tree's data next to this file */
	if (getenv("SHARDLAB_DATADIR") == NULL) {
		char file[1024];
		snprintf(file, sizeof file, "%s", __FILE__);
		snprintf(datadir, sizeof datadir, "%s/../data", dirname(file));
		setenv("SHARDLAB_DATADIR", datadir, 1);
	}
	snprintf(tmpdir, sizeof tmpdir, "%s/shardlab-test-plan.XXXXXX",
	    getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 99;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	/* also what a failed test left behind */
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
