/*
 * graphviz.h: the strategy graph as Graphviz builds it (graphviz.c), for
 * `shardlab render` and the explorer's graph panel alike.  Graphviz's own
 * types stay opaque here: a file that lays the graph out or reads it back
 * includes <gvc.h> itself.
 */
#ifndef SL_CLI_GRAPHVIZ_H
#define SL_CLI_GRAPHVIZ_H

#include "cli.h"

struct Agraph_s;
struct GVC_s;

/* Inches per terminal column and line: Courier at 12 points. */
#define CLI_SG_CW 0.1
#define CLI_SG_CH 0.2

enum cli_sgraph_mode { CLI_SG_CELLS, CLI_SG_CELLS_COMPACT, CLI_SG_RENDER };
/*
 * Builds the strategy graph: operators as nodes holding their strategies
 * (the chosen one marked), edges between neighbours labelled with the
 * resharding buffer and time of the chosen pair.  No seeds: the whole
 * model; else the seed operators and their neighbours within radius edges.
 * Nodes are named by operator index.  CLI_SG_CELLS sizes nodes in terminal
 * cells for drawing; CLI_SG_RENDER gives HTML-table labels for files: one
 * strategy a row, the chosen one and its n_alts nearest alternatives (what
 * each would add, the neighbours' choices held; every strategy when
 * n_alts < 0).
 */
struct Agraph_s *cli_sgraph_build(const sl_space *s, const int *choice,
    const int *seeds, int n_seeds, int radius, enum cli_sgraph_mode mode,
    bool lr, int n_alts);
/* The alternatives a node of a file shows beside the chosen strategy. */
#define CLI_SG_ALTS 3
/* Lays g out with dot and writes it as format ("svg", "dot") to fp. */
int cli_sgraph_render(struct Agraph_s *g, const char *format, FILE *fp,
    sl_error *err);
void cli_sgraph_free(struct Agraph_s *g);
/* The process's one Graphviz context (NULL when none could be made). */
struct GVC_s *cli_gvc(void);
/* Edge e's label: the resharding buffer and time of the chosen pair. */
void cli_sgraph_edge_label(const sl_space *s, int e, const int *choice,
    char *buf, size_t len);
/* "chosen of N", the second line of a node box in the terminal. */
void cli_sgraph_box_strat(const sl_space *s, int op, int chosen, char *buf,
    size_t len);

#endif
