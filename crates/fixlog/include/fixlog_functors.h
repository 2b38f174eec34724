/*
 * fixlog_functors.h — the ABI of Fixlog's user-defined functors.
 *
 * A program declares a functor and calls it with `@`:
 *
 *     .functor add1(x: number): number
 *     .functor greet(a: symbol, b: symbol): symbol
 *     .functor tag(s: symbol, n: number): symbol stateful
 *     r(@add1(x), @greet(a, b)) :- ...
 *
 * and `fixlog run -L DIR -l NAME prog.dl` loads DIR/libNAME.so (the `-L` directories
 * are searched in order, then the working directory; without `-l`, `libfunctors.so`
 * as Soufflé). Each functor is the library's C symbol of the same name.
 *
 * Stateless functors: Soufflé's ABI. Every Fixlog value is 32 bits (Soufflé's default
 * RamDomain), so
 *     number   -> int32_t
 *     unsigned -> uint32_t
 *     float    -> float
 *     symbol   -> const char*  (argument: valid during the call only;
 *                               result: copied by Fixlog at once, so a static or
 *                               thread-local buffer is fine; NULL means "no result":
 *                               the rule does not fire for that tuple)
 * Subtypes (`.type T <: number`) pass as their base type; records and ADTs cannot be
 * passed or returned.
 *
 * Stateful functors: `RamDomain f(fixlog_symbol_table*, void* records, RamDomain...)`.
 * Every argument and the result are 32-bit values (a symbol is its id; a float its
 * bits). Unlike Soufflé, whose tables are C++ classes, the symbol table is the C
 * struct below: decode and encode symbols through its function pointers (the helpers
 * fixlog_decode / fixlog_encode). `records` is NULL (records are not supported).
 *
 * Functors may be called from several threads at once, in no particular order, and
 * more than once for the same arguments: make them pure (or thread-safe).
 *
 * Limits: at most 6 integer/symbol arguments (4 for stateful functors, whose two
 * tables count) and 8 float arguments; x86-64 and AArch64 only.
 */
#ifndef FIXLOG_FUNCTORS_H
#define FIXLOG_FUNCTORS_H

#include <stdint.h>

typedef int32_t RamDomain;
typedef int32_t RamSigned;
typedef uint32_t RamUnsigned;
typedef float RamFloat;

typedef struct fixlog_symbol_table {
    const void *ctx;
    /* The text of symbol `id`, valid until the functor returns. */
    const char *(*decode)(const void *ctx, RamDomain id);
    /* The id of `text` (interned if new). */
    RamDomain (*encode)(const void *ctx, const char *text);
} fixlog_symbol_table;

static inline const char *fixlog_decode(const fixlog_symbol_table *t, RamDomain id) {
    return t->decode(t->ctx, id);
}

static inline RamDomain fixlog_encode(const fixlog_symbol_table *t, const char *text) {
    return t->encode(t->ctx, text);
}

#endif /* FIXLOG_FUNCTORS_H */
