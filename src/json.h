/*
 * json.h: the engine's one JSON reader and writer.
 *
 * Every JSON file shardlab reads (models, plans, hardware profiles,
 * Hugging Face configs, the GPU runner's results) goes through
 * sl_json_read: jansson gives the values, and a strict scanner of the same
 * text gives where each value starts, so that an error about any value, an
 * element of an array included, names its line and column.  IOPDDL
 * problems, whose trees would take tens of times their text, are read by
 * the same scanner one value at a time (the pull reader, jp_pull_*).  Readers name
 * the value an error is about by its path ("device.gemm[3].tflops",
 * "ops[2].shape[1]"), never by parsing their own message.  The scanner is a
 * strict JSON checker too: the first syntax error comes back with the exact
 * line and column of the offending character and a message that says what
 * was expected.  Lines and columns are 1-based; a column counts characters
 * (UTF-8 code points), as editors do.
 *
 * Every JSON file shardlab writes is built with jansson and written by
 * sl_json_write, in one layout, through the atomic writer (util.c); the one
 * exception is the IOPDDL problem writer (iopddl.c), which streams problems
 * of tens of thousands of nodes in the contest's own layout.
 */
#ifndef SL_JSON_H
#define SL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "shardlab.h"

typedef enum jp_type {
	JP_OBJECT, JP_ARRAY, JP_STRING, JP_NUMBER, JP_TRUE, JP_FALSE, JP_NULL
} jp_type;

typedef struct jp_node jp_node;
struct jp_node {
	jp_type type;
	int line, col;		/* first character of the value */
	char *key;		/* member of an object: its decoded key, else NULL */
	int key_line, key_col;	/* member of an object: the key's opening quote */
	int idx;		/* its place among its parent's members or elements */
	int n;			/* children (members or elements) */
	jp_node **kids;
};

typedef struct jp_doc jp_doc;

typedef struct jp_error {
	int line, col;
	char msg[256];
	bool limit;		/* valid so far, but more than memory allows */
} jp_error;

/* Deepest nesting of arrays and objects accepted. */
#define JP_MAX_DEPTH 256

/*
 * Scans text (len bytes; NUL bytes inside are errors, not terminators).
 * Returns the position tree, or NULL with e filled for the first syntax
 * error.  A UTF-8 byte order mark at the start is skipped.
 */
jp_doc *jp_scan(const char *text, size_t len, jp_error *e);
/*
 * The same, keeping only the nodes along path (as for jp_find): positions
 * of the nodes on the path, in memory bounded by its length however large
 * the document.  For pointing at a value in an error.
 */
jp_doc *jp_scan_path(const char *text, size_t len, const char *path,
    jp_error *e);
void jp_free(jp_doc *d);
const jp_node *jp_root(const jp_doc *d);

/* Member of an object by key (NULL if absent or n is not an object). */
const jp_node *jp_member(const jp_node *n, const char *key);
/* Element i of an array (NULL if out of range or n is not an array). */
const jp_node *jp_index(const jp_node *n, int i);
/*
 * Follows a path such as "ops[3].kind" or "tensors[0].shape[1]" ("" is the
 * root).  Returns the node, or NULL when the path does not exist.
 */
const jp_node *jp_find(const jp_doc *d, const char *path);


/* ------------------------------------------------------------ pull reader */

/*
 * A document read one value at a time, for inputs whose tree would not fit
 * in memory (IOPDDL problems): the same strict checks as jp_scan, in memory
 * bounded by the nesting depth; the caller keeps what it needs as it goes,
 * and bounds that by what it has read (the problem's own dimensions).
 * Repeated members are not checked for.
 */
typedef enum jp_tok {
	JP_T_OBJECT,		/* '{' opened (its members follow) */
	JP_T_ARRAY,		/* '[' opened (its elements follow) */
	JP_T_END,		/* the innermost open object or array closed */
	JP_T_STRING, JP_T_NUMBER, JP_T_TRUE, JP_T_FALSE, JP_T_NULL,
	JP_T_EOF,		/* after the root value, nothing but space */
	JP_T_ERROR		/* jp_pull_error says where and why */
} jp_tok;

typedef struct jp_pull jp_pull;
/* text must stay valid until jp_pull_free. */
jp_pull *jp_pull_new(const char *text, size_t len);
void jp_pull_free(jp_pull *p);
jp_tok jp_pull_next(jp_pull *p);
/* After an OBJECT or ARRAY token, reads past its end (JP_T_END); other
 * tokens are returned as they are. */
jp_tok jp_pull_skip(jp_pull *p, jp_tok t);
/* The member name of the last value in an object, NULL in an array; valid
 * until the next call. */
const char *jp_pull_key(const jp_pull *p);
/* The decoded text of the last STRING token, until the next call. */
const char *jp_pull_string(const jp_pull *p);
/* The last NUMBER token as an int64: an integer, or an integral real that
 * fits; false otherwise. */
bool jp_pull_int64(const jp_pull *p, int64_t *out);
/* Where the last token starts (for END: its bracket). */
void jp_pull_where(const jp_pull *p, int *line, int *col);
/* Objects and arrays open around the scanner. */
int jp_pull_depth(const jp_pull *p);
const jp_error *jp_pull_error(const jp_pull *p);

/* ------------------------------------------------------------- documents */

/* A document read by sl_json_read: its values and where each one is. */
typedef struct sl_json {
	const char *file;	/* for messages */
	json_t *root;		/* the values (owned); NULL for sl_json_text */
	jp_doc *pos;		/* every value's position; NULL for sl_json_text */
	const char *text;	/* sl_json_text: scanned again for a position */
	size_t len;
} sl_json;

/* Accept repeated members, the last one winning. */
#define SL_JSON_DUPLICATES 0x2

/*
 * Reads the JSON text (len bytes) of file into j.  On a syntax error returns
 * code (SL_EINPUT for a user's input, SL_EINTERNAL for the output of another
 * program) with err naming file, line and column: "not valid JSON: ...".
 * What the document's values take in memory is bounded as the text is: a
 * document of more values than sl_max_input() / 128 is refused at the
 * first value past them, before any tree of them is built.
 */
int sl_json_read(sl_json *j, const char *file, const char *text, size_t len,
    unsigned flags, int code, sl_error *err);
/* Reads file (plain or gzip text) with sl_json_read. */
int sl_json_read_file(sl_json *j, const char *file, unsigned flags, int code,
    sl_error *err);
/*
 * A document of positions alone, for a text read by the pull reader: the
 * text is scanned again when a position is asked for (sl_json_where,
 * sl_json_fail), and must stay valid while j is used.  Nothing to free.
 */
void sl_json_text(sl_json *j, const char *file, const char *text, size_t len);
void sl_json_free(sl_json *j);

/*
 * Where the value at path starts (jp_find's syntax; "" is the root).  A path
 * that does not exist gives its deepest ancestor that does, so a missing
 * member is reported at its object.  0, 0 when nothing is known.
 */
void sl_json_where(const sl_json *j, const char *path, int *line, int *col);
/* The position node of path as sl_json_where finds it (not sl_json_text's). */
const jp_node *sl_json_node(const sl_json *j, const char *path);
/* Sets err (SL_EINPUT) at the value of path, as sl_json_where finds it. */
int sl_json_fail(const sl_json *j, sl_error *err, const char *path,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Writes root (whose reference it takes) to path (or "-", standard output)
 * through the atomic writer, in the project's layout (json.c, "writer";
 * man shardlab-plan.5, LAYOUT): the top-level members one per line, the
 * elements of an array of records one per line, the rest of a record on
 * its line, reals in their shortest exact form.  root NULL (a failed
 * build) or a failed write gives SL_EINTERNAL with what ("cannot write the
 * model").
 */
int sl_json_write(json_t *root, const char *path, const char *what,
    sl_error *err);
/*
 * The same text in a string (malloc'd, with the final line break), for
 * files written by another layer; takes root's reference.  NULL if root is.
 */
char *sl_json_format(json_t *root);
/* A real, or null when d is not finite (jansson holds no such real). */
json_t *sl_json_real(double d);
/*
 * A measured real rounded to digits significant digits (what it can tell),
 * so that it is written with them; null when not finite.
 */
json_t *sl_json_real_digits(double d, int digits);
/* A string, or null for NULL. */
json_t *sl_json_str(const char *s);
/*
 * d in the writer's form: the fewest significant digits that read back as d
 * (15, 16 or 17; from 1 for a subnormal d), with an exponent below 1e-4,
 * from 1e15 up and where it saves six zeros or more (4e-6, 2e12), else
 * positional with ".0" added to what looks like an integer (100.0); "null"
 * when not finite.  len 32 is enough.
 */
void sl_json_format_real(double d, char *buf, size_t len);

/*
 * s as a JSON string in the writer's form, for the one writer that streams
 * (the IOPDDL problem writer, iopddl.c).  SL_EINPUT, writing nothing, when
 * s is not valid UTF-8.
 */
int sl_json_put_string(FILE *fp, const char *s);

/*
 * A hardware profile as the object its file holds (hardware.c), and read
 * back from obj, the value at path of document j (errors name its members
 * at their line and column).
 */
json_t *sl_hw_json(const sl_hw *hw);
int sl_hw_parse_json(const sl_json *j, const char *path, json_t *obj,
    sl_hw *hw, sl_error *err);

/*
 * A plan file's "recipe" object (plan.c): the framework, attention,
 * precision and recomputation by name, the batches and the sequence, and
 * layer_recompute when n_layers > 0.  Both plan formats write it with this.
 */
json_t *sl_plan_recipe_json(const sl_recipe *r, const uint8_t *layer_recompute,
    int n_layers);

#endif /* SL_JSON_H */
