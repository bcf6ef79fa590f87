/*
 * jsonpos.h: where each value of a JSON text starts.
 *
 * jansson parses values but keeps no positions, so error messages about a
 * value ("expected a positive integer dimension, got -4") could not say
 * where it is.  jsonpos scans the same text once into a tree of positions
 * that mirrors the document: the model loader walks it beside jansson's
 * values.  The scanner is a strict JSON checker too: the first syntax error
 * comes back with the exact line and column of the offending character and a
 * message that says what was expected, which is more precise than jansson's
 * position after the token.  Lines and columns are 1-based; a column counts
 * characters (UTF-8 code points), as editors do.
 */
#ifndef SL_JSONPOS_H
#define SL_JSONPOS_H

#include <stddef.h>

typedef enum jp_type {
	JP_OBJECT, JP_ARRAY, JP_STRING, JP_NUMBER, JP_TRUE, JP_FALSE, JP_NULL
} jp_type;

typedef struct jp_node jp_node;
struct jp_node {
	jp_type type;
	int line, col;		/* first character of the value */
	char *key;		/* member of an object: its decoded key, else NULL */
	int key_line, key_col;	/* member of an object: the key's opening quote */
	int n;			/* children (members or elements) */
	jp_node **kids;
};

typedef struct jp_doc jp_doc;

typedef struct jp_error {
	int line, col;
	char msg[256];
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
 * The same, keeping children only along path (as for jp_find): positions of
 * the nodes on the path and of their immediate children, in memory that
 * stays small on large documents.  For pointing at a value in an error.
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

#endif /* SL_JSONPOS_H */
