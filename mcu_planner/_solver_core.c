/*
 * Exact search for static buffer placement ("does every buffer fit below a
 * given capacity?"), the core of the `optimal` planner.
 *
 * The method follows Moffitt, "MiniMalloc: A Lightweight Memory Allocator for
 * Hardware-Accelerated Machine Learning" (ASPLOS 2023):
 *
 *  - Only canonical solutions are searched: buffers are placed in
 *    non-decreasing order of offset (ties broken by a static preorder rank),
 *    each at the lowest offset above every placed buffer it overlaps in time.
 *    Any feasible packing can be pushed down and relabelled into one of these,
 *    so the search stays complete while skipping permutations of one packing.
 *  - Dominance: placing a buffer at or above the lowest top some unplaced
 *    buffer could reach leaves a hole that buffer fits in; such a branch is
 *    never needed.
 *  - Section bounds: time is cut into sections at every start/end.  In a
 *    section every remaining buffer must sit above that section's floor (the
 *    top of the last placed buffer there, or the lowest offset any remaining
 *    buffer there may take, whichever is higher) and above the current offset,
 *    and they stack, so floor + remaining bytes must not exceed the capacity.
 *  - Decomposition: when no unplaced buffer crosses the boundary between two
 *    sections, the two sides no longer interact and are solved one after the
 *    other; failing one side fails the node without retrying the other.
 *  - Overlap pairs (lower, upper, height): when `lower` sits at or below
 *    `upper`, `upper` need only start `height` units above it instead of
 *    `lower`'s size (an op's output partly over the input it reads for the
 *    last time).  Heights are at least 1, so no two buffers of a pair take
 *    one offset, and the canonical order above stays complete: a placed
 *    buffer raises each unplaced neighbour to its offset plus the height it
 *    has for that neighbour.  Section totals subtract what each pair whose
 *    two buffers are both still unplaced could save, and a placed lower
 *    buffer's floor in its partner's sections is its offset plus the height,
 *    so the section bounds stay valid.
 *  - Restarts: the search runs with a node limit that doubles each round,
 *    cycling through three static preorders, as a cheap hedge against one
 *    preorder getting stuck deep in a fruitless subtree.
 *
 * Sizes and offsets are in units of the problem's alignment, so every offset
 * the search produces is aligned.  No global state: the CPython binding
 * (_solver.c) runs solver_fit with the GIL released.
 */

/* clock_gettime(CLOCK_MONOTONIC) under a strict -std=c99 (Python.h defined it for the binding). */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 199309L
#endif

#include "_solver_core.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#include <windows.h>
#endif

enum { MAX_PREORDERS = 8, KEYS_PER_PREORDER = 4 };

typedef struct {
    int64_t offset; /* the lowest offset the buffer may take now */
    int rank;       /* position in its partition's preorder */
} Candidate;

typedef struct {
    int index;
    int64_t value;
} Change; /* a value to put back on backtrack */

typedef struct {
    Change *items;
    size_t len, cap;
} ChangeLog;

/* Scratch owned by one recursion depth. */
typedef struct {
    Candidate *cands;
    int cands_cap;
    int *order;
    int order_cap;
    int *cutpoints;
    int cutpoints_cap;
} Level;

typedef struct {
    int n, num_sections;
    int64_t capacity;
    const int64_t *size, *start;
    int64_t *width;
    int *first_sec, *end_sec; /* a buffer lives in sections [first_sec, end_sec) */
    int *adj_start, *adj;     /* buffers overlapping in time (CSR) */
    int64_t *adj_height;      /* per adj entry: how far above this buffer that neighbour must start */
    int *pair_start;          /* per buffer: its overlap pairs (CSR) */
    int *pair_partner;
    int64_t *pair_height;     /* > 0 when this buffer is the pair's lower one: the partner's height */
    int64_t *pair_saving;     /* bytes the pair may share: the lower buffer's size less the height */
    int *member_start, *members; /* buffers alive in each section (CSR) */
    int64_t *initial_total;
    int *initial_cuts;

    int64_t *offset; /* -1 while unplaced */
    int64_t *min_offset;
    int64_t *floor_;
    int64_t *total; /* bytes of unplaced buffers alive in the section */
    int *cuts;      /* cuts[t]: unplaced buffers alive in both t and t+1 */
    int64_t *stamp;
    int64_t stamp_now;
    int *affected;
    Candidate *changed;
    Candidate *merge_tmp;
    int *order_tmp;
    int64_t *keys;
    int64_t *solution;
    ChangeLog offset_log, floor_log;
    Level *levels;
    int num_levels;

    char preorders[MAX_PREORDERS][KEYS_PER_PREORDER + 1]; /* e.g. "WAT": see compute_keys */
    int num_preorders;
    int preorder;
    uint64_t seed; /* for the R(andom) key: changes every round */
    int64_t nodes, node_limit, total_nodes;
    int64_t max_nodes; /* > 0: the whole fit visits at most this many nodes */
    double deadline;
    int failed; /* an allocation failed: abort the search */
} Solver;

static double now_seconds(void)
{
#ifdef _WIN32
    return (double)GetTickCount64() * 1e-3;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#endif
}

static void log_push(Solver *s, ChangeLog *log, int index, int64_t value)
{
    if (log->len == log->cap) {
        size_t cap = log->cap ? log->cap * 2 : 1024;
        Change *items = realloc(log->items, cap * sizeof *items);
        if (!items) {
            s->failed = 1;
            return;
        }
        log->items = items;
        log->cap = cap;
    }
    log->items[log->len].index = index;
    log->items[log->len].value = value;
    log->len++;
}

static int grow_ints(Solver *s, int **array, int *cap, int need)
{
    if (*cap >= need) return 1;
    int *grown = realloc(*array, (size_t)(need > 0 ? need : 1) * sizeof **array);
    if (!grown) {
        s->failed = 1;
        return 0;
    }
    *array = grown;
    *cap = need;
    return 1;
}

static int grow_cands(Solver *s, Candidate **array, int *cap, int need)
{
    if (*cap >= need) return 1;
    Candidate *grown = realloc(*array, (size_t)(need > 0 ? need : 1) * sizeof **array);
    if (!grown) {
        s->failed = 1;
        return 0;
    }
    *array = grown;
    *cap = need;
    return 1;
}

/* ---- orderings ---------------------------------------------------------- */

static int candidate_before(const Candidate *a, const Candidate *b)
{
    return a->offset != b->offset ? a->offset < b->offset : a->rank < b->rank;
}

static void sort_candidates(Candidate *items, Candidate *tmp, int count)
{
    if (count < 2) return;
    if (count <= 16) {
        for (int i = 1; i < count; ++i) {
            Candidate item = items[i];
            int j = i;
            while (j > 0 && candidate_before(&item, &items[j - 1])) {
                items[j] = items[j - 1];
                --j;
            }
            items[j] = item;
        }
        return;
    }
    int half = count / 2;
    sort_candidates(items, tmp, half);
    sort_candidates(items + half, tmp, count - half);
    int i = 0, j = half, w = 0;
    while (i < half && j < count) tmp[w++] = candidate_before(&items[j], &items[i]) ? items[j++] : items[i++];
    while (i < half) tmp[w++] = items[i++];
    while (j < count) tmp[w++] = items[j++];
    memcpy(items, tmp, (size_t)count * sizeof *items);
}

/* Static preorder: larger key first, lexicographically; lower index on ties. */
static int preorder_before(const Solver *s, int a, int b)
{
    const int64_t *ka = s->keys + (size_t)a * KEYS_PER_PREORDER;
    const int64_t *kb = s->keys + (size_t)b * KEYS_PER_PREORDER;
    for (int i = 0; i < KEYS_PER_PREORDER; ++i)
        if (ka[i] != kb[i]) return ka[i] > kb[i];
    return a < b;
}

static void sort_by_preorder(const Solver *s, int *items, int *tmp, int count)
{
    if (count < 2) return;
    int half = count / 2;
    sort_by_preorder(s, items, tmp, half);
    sort_by_preorder(s, items + half, tmp, count - half);
    int i = 0, j = half, w = 0;
    while (i < half && j < count) tmp[w++] = preorder_before(s, items[j], items[i]) ? items[j++] : items[i++];
    while (i < half) tmp[w++] = items[i++];
    while (j < count) tmp[w++] = items[j++];
    memcpy(items, tmp, (size_t)count * sizeof *items);
}

/* Keys of a preorder, one letter each, larger first: W(idth of the lifetime),
 * A(rea: size x width), T(otal: the most bytes still to place in any section
 * the buffer lives in), Z (size), C (sections spanned), O (buffers overlapped),
 * L(ower: start), U(pper: end).  minimalloc found WAT, TAW and TWA to
 * complement each other. */
static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9u;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBu;
    return x ^ (x >> 31);
}

static void compute_keys(Solver *s, const int *buffers, int count)
{
    const char *letters = s->preorders[s->preorder];
    for (int i = 0; i < count; ++i) {
        int b = buffers[i];
        int64_t *key = s->keys + (size_t)b * KEYS_PER_PREORDER;
        for (int k = 0; k < KEYS_PER_PREORDER; ++k) {
            int64_t value = 0;
            switch (letters[k]) {
            case 'W': value = s->width[b]; break;
            case 'A': value = s->size[b] * s->width[b]; break;
            case 'T':
                for (int t = s->first_sec[b]; t < s->end_sec[b]; ++t)
                    if (s->total[t] > value) value = s->total[t];
                break;
            case 'Z': value = s->size[b]; break;
            case 'C': value = s->end_sec[b] - s->first_sec[b]; break;
            case 'O': value = s->adj_start[b + 1] - s->adj_start[b]; break;
            case 'L': value = s->start[b]; break;
            case 'U': value = s->start[b] + s->width[b]; break;
            case 'R': value = (int64_t)(mix64((uint64_t)b * 0x9E3779B97F4A7C15u + s->seed) >> 1); break;
            default: value = 0; break;
            }
            key[k] = value;
        }
    }
}

/* Parses "WAT,TAW,TWA"; returns 0 when malformed. */
static int parse_preorders(Solver *s, const char *text)
{
    s->num_preorders = 0;
    while (*text) {
        if (s->num_preorders == MAX_PREORDERS) return 0;
        char *slot = s->preorders[s->num_preorders++];
        int len = 0;
        memset(slot, 0, KEYS_PER_PREORDER + 1);
        while (*text && *text != ',') {
            if (len == KEYS_PER_PREORDER || !strchr("WATZCOLUR", *text)) return 0;
            slot[len++] = *text++;
        }
        if (len == 0) return 0;
        if (*text == ',') text++;
    }
    return s->num_preorders > 0;
}

/* ---- placing and unplacing ---------------------------------------------- */

/* Returns whether any unplaced buffer overlaps b in time. */
static int place(Solver *s, int b, int64_t offset)
{
    int64_t top = offset + s->size[b];
    int num_affected = 0, covered = 0;
    s->offset[b] = offset;
    s->stamp_now++;
    for (int e = s->adj_start[b]; e < s->adj_start[b + 1]; ++e) {
        int j = s->adj[e];
        if (s->offset[j] >= 0) continue;
        covered = 1;
        int64_t reach = offset + s->adj_height[e];
        if (s->min_offset[j] >= reach) continue;
        log_push(s, &s->offset_log, j, s->min_offset[j]);
        s->min_offset[j] = reach;
        for (int t = s->first_sec[j]; t < s->end_sec[j]; ++t) {
            if (s->stamp[t] == s->stamp_now) continue;
            s->stamp[t] = s->stamp_now;
            s->affected[num_affected++] = t;
        }
    }
    for (int t = s->first_sec[b]; t < s->end_sec[b]; ++t) {
        log_push(s, &s->floor_log, t, s->floor_[t]);
        s->floor_[t] = top;
        s->total[t] -= s->size[b];
    }
    /* A pair with its partner still unplaced: the partner may start `height`
     * above b, and the bytes the two could share are no longer to be saved. */
    for (int q = s->pair_start[b]; q < s->pair_start[b + 1]; ++q) {
        int j = s->pair_partner[q];
        if (s->offset[j] >= 0) continue;
        int lo = s->first_sec[b] > s->first_sec[j] ? s->first_sec[b] : s->first_sec[j];
        int hi = s->end_sec[b] < s->end_sec[j] ? s->end_sec[b] : s->end_sec[j];
        for (int t = lo; t < hi; ++t) {
            s->total[t] += s->pair_saving[q];
            if (s->pair_height[q] > 0 && offset + s->pair_height[q] < s->floor_[t]) {
                log_push(s, &s->floor_log, t, s->floor_[t]);
                s->floor_[t] = offset + s->pair_height[q];
            }
        }
    }
    /* Nothing left in a section can go below the lowest offset any of them may take. */
    for (int a = 0; a < num_affected; ++a) {
        int t = s->affected[a];
        int64_t lowest = INT64_MAX;
        for (int m = s->member_start[t]; m < s->member_start[t + 1]; ++m) {
            int j = s->members[m];
            if (s->offset[j] < 0 && s->min_offset[j] < lowest) lowest = s->min_offset[j];
        }
        if (lowest != INT64_MAX && lowest > s->floor_[t]) {
            log_push(s, &s->floor_log, t, s->floor_[t]);
            s->floor_[t] = lowest;
        }
    }
    return covered;
}

static void unplace(Solver *s, int b, size_t offset_mark, size_t floor_mark)
{
    while (s->floor_log.len > floor_mark) {
        const Change *c = &s->floor_log.items[--s->floor_log.len];
        s->floor_[c->index] = c->value;
    }
    for (int t = s->first_sec[b]; t < s->end_sec[b]; ++t) s->total[t] += s->size[b];
    for (int q = s->pair_start[b]; q < s->pair_start[b + 1]; ++q) {
        int j = s->pair_partner[q];
        if (s->offset[j] >= 0) continue;
        int lo = s->first_sec[b] > s->first_sec[j] ? s->first_sec[b] : s->first_sec[j];
        int hi = s->end_sec[b] < s->end_sec[j] ? s->end_sec[b] : s->end_sec[j];
        for (int t = lo; t < hi; ++t) s->total[t] -= s->pair_saving[q];
    }
    while (s->offset_log.len > offset_mark) {
        const Change *c = &s->offset_log.items[--s->offset_log.len];
        s->min_offset[c->index] = c->value;
    }
    s->offset[b] = -1;
}

/* Every section of the partition can still hold what it must. */
static int sections_fit(const Solver *s, int sec_lo, int sec_hi, int64_t offset)
{
    for (int t = sec_lo; t < sec_hi; ++t) {
        if (s->total[t] == 0) continue;
        int64_t base = s->floor_[t] > offset ? s->floor_[t] : offset;
        if (base + s->total[t] > s->capacity) return 0;
    }
    return 1;
}

/* ---- search --------------------------------------------------------------- */

static Level *level_at(Solver *s, int depth)
{
    if (depth >= s->num_levels) {
        int grown = s->num_levels * 2 > depth + 1 ? s->num_levels * 2 : depth + 1;
        Level *levels = realloc(s->levels, (size_t)grown * sizeof *levels);
        if (!levels) {
            s->failed = 1;
            return NULL;
        }
        memset(levels + s->num_levels, 0, (size_t)(grown - s->num_levels) * sizeof *levels);
        s->levels = levels;
        s->num_levels = grown;
    }
    return &s->levels[depth];
}

static int search(Solver *s, const int *order, int part_n, int sec_lo, int sec_hi, Candidate *cands, int k,
                  int64_t last_offset, int last_rank, int depth);

/* Solves the sections [lo, hi) split at `cutpoints`, each part on its own. */
static int solve_parts(Solver *s, const int *parent_order, int parent_n, int lo, int hi, const int *cutpoints,
                       int num_cuts, int depth)
{
    int begin = lo;
    for (int c = 0; c <= num_cuts; ++c) {
        int end = c < num_cuts ? cutpoints[c] : hi;
        Level *level = level_at(s, depth);
        if (!level || !grow_ints(s, &level->order, &level->order_cap, parent_n) ||
            !grow_cands(s, &level->cands, &level->cands_cap, parent_n))
            return OUT_OF_MEMORY;
        int *order = level->order;
        int count = 0;
        for (int i = 0; i < parent_n; ++i) {
            int j = parent_order[i];
            if (s->offset[j] < 0 && s->first_sec[j] < end && s->end_sec[j] > begin) order[count++] = j;
        }
        if (count > 0) {
            compute_keys(s, order, count);
            sort_by_preorder(s, order, s->order_tmp, count);
            Candidate *cands = level->cands;
            for (int r = 0; r < count; ++r) {
                cands[r].offset = s->min_offset[order[r]];
                cands[r].rank = r;
            }
            sort_candidates(cands, s->merge_tmp, count);
            int status = search(s, order, count, begin, end, cands, count, -1, -1, depth);
            if (status != FOUND) return status;
        }
        begin = end;
    }
    return FOUND;
}

/* Candidates for the child node: the parent's list without the placed one,
 * re-sorted where lowest offsets rose (few do, so merge rather than sort). */
static int child_candidates(Solver *s, const int *order, const Candidate *cands, int k, int chosen, Candidate *child)
{
    int kept = 0, moved = 0;
    for (int i = 0; i < k; ++i) {
        if (i == chosen) continue;
        int64_t now = s->min_offset[order[cands[i].rank]];
        if (now == cands[i].offset) {
            child[kept++] = cands[i];
        } else {
            s->changed[moved].offset = now;
            s->changed[moved].rank = cands[i].rank;
            moved++;
        }
    }
    sort_candidates(s->changed, s->merge_tmp, moved);
    int i = kept - 1, j = moved - 1, w = kept + moved - 1;
    while (j >= 0) {
        if (i >= 0 && candidate_before(&s->changed[j], &child[i]))
            child[w--] = child[i--];
        else
            child[w--] = s->changed[j--];
    }
    return kept + moved;
}

static int search(Solver *s, const int *order, int part_n, int sec_lo, int sec_hi, Candidate *cands, int k,
                  int64_t last_offset, int last_rank, int depth)
{
    if (s->nodes >= s->node_limit) return OUT_OF_NODES;
    if (s->max_nodes > 0 && s->total_nodes + s->nodes >= s->max_nodes) return OUT_OF_WORK;
    if ((++s->nodes & 255) == 0 && now_seconds() > s->deadline) return OUT_OF_TIME;
    if (k == 0) {
        for (int i = 0; i < part_n; ++i) s->solution[order[i]] = s->offset[order[i]];
        return FOUND;
    }
    int64_t lowest_top = INT64_MAX;
    for (int i = 0; i < k; ++i) {
        int64_t top = cands[i].offset + s->size[order[cands[i].rank]];
        if (top < lowest_top) lowest_top = top;
    }
    for (int i = 0; i < k; ++i) {
        const Candidate c = cands[i];
        if (c.offset >= lowest_top) break; /* dominated: a hole below would fit some buffer */
        if (c.offset < last_offset || (c.offset == last_offset && c.rank < last_rank)) continue;
        int b = order[c.rank];
        if (c.offset + s->size[b] > s->capacity) continue;
        size_t offset_mark = s->offset_log.len, floor_mark = s->floor_log.len;
        int covered = place(s, b, c.offset);
        int status = NOT_FOUND;
        if (s->failed) {
            status = OUT_OF_MEMORY;
        } else if (sections_fit(s, sec_lo, sec_hi, c.offset)) {
            Level *here = level_at(s, depth);
            int span = s->end_sec[b] - s->first_sec[b];
            int num_cuts = 0;
            if (!here || !grow_ints(s, &here->cutpoints, &here->cutpoints_cap, span)) {
                status = OUT_OF_MEMORY;
            } else {
                for (int t = s->first_sec[b]; t + 1 < s->end_sec[b]; ++t)
                    if (--s->cuts[t] == 0) here->cutpoints[num_cuts++] = t + 1;
                if (num_cuts == 0) {
                    Level *next = level_at(s, depth + 1);
                    if (!next || !grow_cands(s, &next->cands, &next->cands_cap, k)) {
                        status = OUT_OF_MEMORY;
                    } else {
                        int child_k = child_candidates(s, order, cands, k, i, next->cands);
                        status = search(s, order, part_n, sec_lo, sec_hi, next->cands, child_k, c.offset, c.rank,
                                        depth + 1);
                    }
                } else {
                    /* `here` may move while deeper levels grow the array; copy the cuts out first. */
                    int *cutpoints = s->levels[depth].cutpoints;
                    status = solve_parts(s, order, part_n, sec_lo, sec_hi, cutpoints, num_cuts, depth + 1);
                    if (status == FOUND)
                        for (int m = 0; m < part_n; ++m)
                            if (s->offset[order[m]] >= 0) s->solution[order[m]] = s->offset[order[m]];
                }
                for (int t = s->first_sec[b]; t + 1 < s->end_sec[b]; ++t) ++s->cuts[t];
            }
        }
        unplace(s, b, offset_mark, floor_mark);
        if (status != NOT_FOUND) return status;
        /* Nothing left can ever sit on b, and no canonical completion places
         * b anywhere but here: another first choice cannot succeed either. */
        if (!covered) break;
    }
    return NOT_FOUND;
}

static int solve_round(Solver *s)
{
    for (int b = 0; b < s->n; ++b) {
        s->offset[b] = -1;
        s->min_offset[b] = 0;
    }
    for (int t = 0; t < s->num_sections; ++t) {
        s->floor_[t] = 0;
        s->total[t] = s->initial_total[t];
        if (t + 1 < s->num_sections) s->cuts[t] = s->initial_cuts[t];
    }
    s->offset_log.len = s->floor_log.len = 0;
    int num_cuts = 0;
    Level *root = level_at(s, 0);
    if (!root || !grow_ints(s, &root->cutpoints, &root->cutpoints_cap, s->num_sections)) return OUT_OF_MEMORY;
    for (int t = 0; t + 1 < s->num_sections; ++t)
        if (s->cuts[t] == 0) root->cutpoints[num_cuts++] = t + 1;
    for (int b = 0; b < s->n; ++b) s->order_tmp[b] = b;
    /* The root "partition" lists every buffer; solve_parts copies what it needs. */
    int *everyone = malloc((size_t)s->n * sizeof *everyone);
    if (!everyone) return OUT_OF_MEMORY;
    memcpy(everyone, s->order_tmp, (size_t)s->n * sizeof *everyone);
    int status = solve_parts(s, everyone, s->n, 0, s->num_sections, s->levels[0].cutpoints, num_cuts, 1);
    free(everyone);
    return status;
}

static int solve(Solver *s)
{
    for (int t = 0; t < s->num_sections; ++t)
        if (s->initial_total[t] > s->capacity) return NOT_FOUND;
    int64_t limit = s->n > 16 ? s->n : 16;
    for (;;) {
        limit *= 2;
        s->seed++;
        for (int p = 0; p < s->num_preorders; ++p) {
            s->preorder = p;
            s->nodes = 0;
            s->node_limit = limit;
            int status = solve_round(s);
            s->total_nodes += s->nodes;
            if (s->failed) return OUT_OF_MEMORY;
            if (status != OUT_OF_NODES) return status;
        }
    }
}

/* ---- problem setup ---------------------------------------------------- */

static int compare_int64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int index_of_time(const int64_t *times, int count, int64_t value)
{
    int lo = 0, hi = count - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (times[mid] < value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void free_solver(Solver *s)
{
    free(s->width);
    free(s->first_sec);
    free(s->end_sec);
    free(s->adj_start);
    free(s->adj);
    free(s->adj_height);
    free(s->pair_start);
    free(s->pair_partner);
    free(s->pair_height);
    free(s->pair_saving);
    free(s->member_start);
    free(s->members);
    free(s->initial_total);
    free(s->initial_cuts);
    free(s->offset);
    free(s->min_offset);
    free(s->floor_);
    free(s->total);
    free(s->cuts);
    free(s->stamp);
    free(s->affected);
    free(s->changed);
    free(s->merge_tmp);
    free(s->order_tmp);
    free(s->keys);
    free(s->solution);
    free(s->offset_log.items);
    free(s->floor_log.items);
    for (int d = 0; d < s->num_levels; ++d) {
        free(s->levels[d].cands);
        free(s->levels[d].order);
        free(s->levels[d].cutpoints);
    }
    free(s->levels);
}

/* Builds sections, overlaps and section members.  Buffers must have size > 0
 * and start < end; pairs (lower, upper, height) valid (read_pairs).  Returns
 * 0 when out of memory. */
static int setup_solver(Solver *s, int n, const int64_t *size, const int64_t *start, const int64_t *end,
                        int num_pairs, const int64_t *overlap_pairs)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->size = size;
    s->start = start;
    int64_t *times = malloc((size_t)(2 * n + 1) * sizeof *times);
    if (!times) return 0;
    for (int b = 0; b < n; ++b) {
        times[2 * b] = start[b];
        times[2 * b + 1] = end[b];
    }
    qsort(times, (size_t)(2 * n), sizeof *times, compare_int64);
    int num_times = 0;
    for (int i = 0; i < 2 * n; ++i)
        if (num_times == 0 || times[num_times - 1] != times[i]) times[num_times++] = times[i];
    int S = num_times > 1 ? num_times - 1 : 1;
    s->num_sections = S;

    s->width = malloc((size_t)n * sizeof *s->width);
    s->first_sec = malloc((size_t)n * sizeof *s->first_sec);
    s->end_sec = malloc((size_t)n * sizeof *s->end_sec);
    s->adj_start = calloc((size_t)n + 1, sizeof *s->adj_start);
    s->member_start = calloc((size_t)S + 1, sizeof *s->member_start);
    s->initial_total = calloc((size_t)S, sizeof *s->initial_total);
    s->initial_cuts = calloc((size_t)S, sizeof *s->initial_cuts);
    s->offset = malloc((size_t)n * sizeof *s->offset);
    s->min_offset = malloc((size_t)n * sizeof *s->min_offset);
    s->floor_ = malloc((size_t)S * sizeof *s->floor_);
    s->total = malloc((size_t)S * sizeof *s->total);
    s->cuts = malloc((size_t)S * sizeof *s->cuts);
    s->stamp = calloc((size_t)S, sizeof *s->stamp);
    s->affected = malloc((size_t)S * sizeof *s->affected);
    s->changed = malloc((size_t)n * sizeof *s->changed);
    s->merge_tmp = malloc((size_t)n * sizeof *s->merge_tmp);
    s->order_tmp = malloc((size_t)n * sizeof *s->order_tmp);
    s->keys = malloc((size_t)n * KEYS_PER_PREORDER * sizeof *s->keys);
    s->solution = malloc((size_t)n * sizeof *s->solution);
    if (!s->width || !s->first_sec || !s->end_sec || !s->adj_start || !s->member_start || !s->initial_total ||
        !s->initial_cuts || !s->offset || !s->min_offset || !s->floor_ || !s->total || !s->cuts || !s->stamp ||
        !s->affected || !s->changed || !s->merge_tmp || !s->order_tmp || !s->keys || !s->solution) {
        free(times);
        return 0;
    }
    for (int b = 0; b < n; ++b) {
        s->width[b] = end[b] - start[b];
        s->first_sec[b] = index_of_time(times, num_times, start[b]);
        s->end_sec[b] = index_of_time(times, num_times, end[b]);
        s->solution[b] = -1;
    }
    free(times);

    size_t members = 0;
    for (int b = 0; b < n; ++b) {
        for (int t = s->first_sec[b]; t < s->end_sec[b]; ++t) {
            s->member_start[t + 1]++;
            s->initial_total[t] += size[b];
            if (t + 1 < s->end_sec[b]) s->initial_cuts[t]++;
        }
        members += (size_t)(s->end_sec[b] - s->first_sec[b]);
    }
    for (int t = 0; t < S; ++t) s->member_start[t + 1] += s->member_start[t];
    s->members = malloc((members ? members : 1) * sizeof *s->members);
    if (!s->members) return 0;
    {
        int *fill = malloc((size_t)S * sizeof *fill);
        if (!fill) return 0;
        memcpy(fill, s->member_start, (size_t)S * sizeof *fill);
        for (int b = 0; b < n; ++b)
            for (int t = s->first_sec[b]; t < s->end_sec[b]; ++t) s->members[fill[t]++] = b;
        free(fill);
    }

    size_t pairs = 0;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
            if (a != b && start[a] < end[b] && start[b] < end[a]) {
                s->adj_start[a + 1]++;
                pairs++;
            }
    for (int a = 0; a < n; ++a) s->adj_start[a + 1] += s->adj_start[a];
    s->adj = malloc((pairs ? pairs : 1) * sizeof *s->adj);
    if (!s->adj) return 0;
    s->adj_height = malloc((pairs ? pairs : 1) * sizeof *s->adj_height);
    if (!s->adj_height) return 0;
    for (int a = 0, w = 0; a < n; ++a)
        for (int b = 0; b < n; ++b)
            if (a != b && start[a] < end[b] && start[b] < end[a]) {
                s->adj_height[w] = size[a];
                s->adj[w++] = b;
            }

    /* Overlap pairs: the lower buffer's height for its partner, and per
     * buffer the list of its pairs (both sides). */
    s->pair_start = calloc((size_t)n + 1, sizeof *s->pair_start);
    s->pair_partner = malloc((size_t)(2 * num_pairs + 1) * sizeof *s->pair_partner);
    s->pair_height = malloc((size_t)(2 * num_pairs + 1) * sizeof *s->pair_height);
    s->pair_saving = malloc((size_t)(2 * num_pairs + 1) * sizeof *s->pair_saving);
    if (!s->pair_start || !s->pair_partner || !s->pair_height || !s->pair_saving) return 0;
    for (int p = 0; p < num_pairs; ++p) {
        s->pair_start[overlap_pairs[3 * p] + 1]++;
        s->pair_start[overlap_pairs[3 * p + 1] + 1]++;
    }
    for (int b = 0; b < n; ++b) s->pair_start[b + 1] += s->pair_start[b];
    {
        int *fill = malloc((size_t)(n ? n : 1) * sizeof *fill);
        if (!fill) return 0;
        memcpy(fill, s->pair_start, (size_t)n * sizeof *fill);
        for (int p = 0; p < num_pairs; ++p) {
            int lower = (int)overlap_pairs[3 * p], upper = (int)overlap_pairs[3 * p + 1];
            int64_t height = overlap_pairs[3 * p + 2], saving = size[lower] - height;
            int q = fill[lower]++;
            s->pair_partner[q] = upper;
            s->pair_height[q] = height;
            s->pair_saving[q] = saving;
            q = fill[upper]++;
            s->pair_partner[q] = lower;
            s->pair_height[q] = 0;
            s->pair_saving[q] = saving;
            for (int e = s->adj_start[lower]; e < s->adj_start[lower + 1]; ++e)
                if (s->adj[e] == upper) s->adj_height[e] = height;
            int lo = s->first_sec[lower] > s->first_sec[upper] ? s->first_sec[lower] : s->first_sec[upper];
            int hi = s->end_sec[lower] < s->end_sec[upper] ? s->end_sec[lower] : s->end_sec[upper];
            for (int t = lo; t < hi; ++t) s->initial_total[t] -= saving;
        }
        free(fill);
    }
    return 1;
}

/* ---- entry points (_solver_core.h) --------------------------------------- */

/* Largest first, first fit: a quick feasible packing to start from. */
int solver_first_fit(int n, const int64_t *size, const int64_t *start, const int64_t *end, int64_t *offset)
{
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    int *placed = malloc((size_t)(n ? n : 1) * sizeof *placed);
    int64_t (*blocks)[2] = malloc((size_t)(n ? n : 1) * sizeof *blocks);
    if (!order || !placed || !blocks) {
        free(order);
        free(placed);
        free(blocks);
        return 0;
    }
    for (int i = 0; i < n; ++i) order[i] = i;
    for (int i = 1; i < n; ++i) { /* insertion sort: n is small and this runs once */
        int item = order[i], j = i;
        while (j > 0) {
            int prev = order[j - 1];
            int64_t wi = end[item] - start[item], wp = end[prev] - start[prev];
            int before = size[item] != size[prev] ? size[item] > size[prev] : (wi != wp ? wi > wp : item < prev);
            if (!before) break;
            order[j] = prev;
            --j;
        }
        order[j] = item;
    }
    int num_placed = 0;
    for (int i = 0; i < n; ++i) {
        int b = order[i], num_blocks = 0;
        for (int p = 0; p < num_placed; ++p) {
            int q = placed[p];
            if (start[b] < end[q] && start[q] < end[b]) {
                blocks[num_blocks][0] = offset[q];
                blocks[num_blocks][1] = offset[q] + size[q];
                num_blocks++;
            }
        }
        qsort(blocks, (size_t)num_blocks, sizeof *blocks, compare_int64); /* by block start */
        int64_t candidate = 0;
        for (int k = 0; k < num_blocks; ++k) {
            if (blocks[k][0] >= candidate + size[b]) break;
            if (blocks[k][1] > candidate) candidate = blocks[k][1];
        }
        offset[b] = candidate;
        placed[num_placed++] = b;
    }
    free(order);
    free(placed);
    free(blocks);
    return 1;
}


int solver_preorders_valid(const char *preorders)
{
    Solver probe;
    return parse_preorders(&probe, preorders);
}

int solver_fit(int n, const int64_t *size, const int64_t *start, const int64_t *end, int num_pairs,
               const int64_t *overlap_pairs, int64_t capacity, double seconds, int64_t max_nodes,
               const char *preorders, int64_t *offset, int64_t *nodes)
{
    Solver s;
    int status;
    *nodes = 0;
    if (n == 0) return FOUND;
    if (!setup_solver(&s, n, size, start, end, num_pairs, overlap_pairs)) {
        free_solver(&s);
        return OUT_OF_MEMORY;
    }
    parse_preorders(&s, preorders);
    s.capacity = capacity;
    s.deadline = now_seconds() + seconds;
    s.max_nodes = max_nodes;
    status = solve(&s);
    *nodes = s.total_nodes;
    if (status == FOUND) memcpy(offset, s.solution, (size_t)n * sizeof *offset);
    free_solver(&s);
    return status;
}
