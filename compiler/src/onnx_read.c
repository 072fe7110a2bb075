/* SPDX-License-Identifier: Apache-2.0 */
/* Pass 1: ONNX ModelProto bytes -> graph. The bytes are untrusted: protobuf-c decodes them
   (the C reader is generated at build time by protoc-c from Debian's onnx.proto), and every
   count, dimension and data length is checked here before it is used. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

/* ONNX operator version histories (the default domain, ONNX 1.12 = opset 17) and the versions
   this compiler implements. A node's version is the latest in its history at or below the
   model's import; it must be one we implement. */
typedef struct {
    const char *name;
    tpuc_op_t op;
    int hist[8];  /* ascending, 0-terminated */
    int impl[8];  /* implemented, 0-terminated */
} op_info_t;

static const op_info_t OPS[] = {
    {"Gemm", TPUC_OP_GEMM, {1, 6, 7, 9, 11, 13}, {7, 9, 11, 13}},
    {"MatMul", TPUC_OP_MATMUL, {1, 9, 13}, {1, 9, 13}},
    {"Add", TPUC_OP_ADD, {1, 6, 7, 13, 14}, {7, 13, 14}},
    {"Mul", TPUC_OP_MUL, {1, 6, 7, 13, 14}, {7, 13, 14}},
    {"Div", TPUC_OP_DIV, {1, 6, 7, 13, 14}, {7, 13, 14}},
    {"Pow", TPUC_OP_POW, {1, 7, 12, 13, 15}, {7, 12, 13, 15}},
    {"Relu", TPUC_OP_RELU, {1, 6, 13, 14}, {6, 13, 14}},
    {"Sigmoid", TPUC_OP_SIGMOID, {1, 6, 13}, {6, 13}},
    {"Tanh", TPUC_OP_TANH, {1, 6, 13}, {6, 13}},
    {"Erf", TPUC_OP_ERF, {9, 13}, {9, 13}},
    {"Softmax", TPUC_OP_SOFTMAX, {1, 11, 13}, {1, 11, 13}},
    {"Conv", TPUC_OP_CONV, {1, 11}, {1, 11}},
    {"MaxPool", TPUC_OP_MAXPOOL, {1, 8, 10, 11, 12}, {1, 8, 10, 11, 12}},
    {"AveragePool", TPUC_OP_AVGPOOL, {1, 7, 10, 11}, {7, 10, 11}},
    {"GlobalAveragePool", TPUC_OP_GAP, {1}, {1}},
    {"Flatten", TPUC_OP_FLATTEN, {1, 9, 11, 13}, {1, 9, 11, 13}},
    {"Reshape", TPUC_OP_RESHAPE, {1, 5, 13, 14}, {5, 13, 14}},
    {"BatchNormalization", TPUC_OP_BN, {1, 6, 7, 9, 14, 15}, {9, 14, 15}},
    {"Dropout", TPUC_OP_DROPOUT, {1, 6, 7, 10, 12, 13}, {7, 10, 12, 13}},
    {"Identity", TPUC_OP_IDENTITY, {1, 13, 14, 16}, {1, 13, 14, 16}},
    {"Pad", TPUC_OP_PAD, {1, 2, 11, 13}, {2, 11, 13}},
    {"ConvTranspose", TPUC_OP_CONVT, {1, 11}, {1, 11}},
    {"Shape", TPUC_OP_SHAPE, {1, 13, 15}, {1, 13, 15}},
    {"Gather", TPUC_OP_GATHER, {1, 11, 13}, {1, 11, 13}},
    {"Unsqueeze", TPUC_OP_UNSQUEEZE, {1, 11, 13}, {1, 11, 13}},
    {"Squeeze", TPUC_OP_SQUEEZE, {1, 11, 13}, {1, 11, 13}},
    {"Slice", TPUC_OP_SLICE, {1, 10, 11, 13}, {10, 11, 13}},
    {"Cast", TPUC_OP_CAST, {1, 6, 9, 13}, {6, 9, 13}},
    {"Concat", TPUC_OP_CONCAT, {1, 4, 11, 13}, {4, 11, 13}},
    {"Clip", TPUC_OP_CLIP, {1, 6, 11, 12, 13}, {6, 11, 12, 13}},
    {"Constant", TPUC_OP_CONSTANT, {1, 9, 11, 12, 13}, {9, 11, 12, 13}},
    {"Transpose", TPUC_OP_TRANSPOSE, {1, 13}, {1, 13}},
    {"Sub", TPUC_OP_SUB, {1, 6, 7, 13, 14}, {7, 13, 14}},
    {"Neg", TPUC_OP_NEG, {1, 6, 13}, {6, 13}},
    {"HardSigmoid", TPUC_OP_HARDSIGMOID, {1, 6}, {6}},
    {"HardSwish", TPUC_OP_HARDSWISH, {14}, {14}},
    {"ReduceMean", TPUC_OP_REDUCEMEAN, {1, 11, 13}, {1, 11, 13}},
    {"ReduceSum", TPUC_OP_REDUCESUM, {1, 11, 13}, {1, 11, 13}},
    {"ReduceMax", TPUC_OP_REDUCEMAX, {1, 11, 12, 13}, {1, 11, 12, 13}},
    {"Sqrt", TPUC_OP_SQRT, {1, 6, 13}, {6, 13}},
    {"Exp", TPUC_OP_EXP, {1, 6, 13}, {6, 13}},
    {"LayerNormalization", TPUC_OP_LAYERNORM, {17}, {17}},
    /* attention masks and torch's F.pad pads, folded on constants (fold_mask.c) */
    {"ConstantOfShape", TPUC_OP_CONSTOFSHAPE, {9}, {9}},
    {"Expand", TPUC_OP_EXPAND, {8, 13}, {8, 13}},
    {"Equal", TPUC_OP_EQUAL, {1, 7, 11, 13}, {7, 11, 13}},
    {"Where", TPUC_OP_WHERE, {9, 16}, {9, 16}},
    {"Trilu", TPUC_OP_TRILU, {14}, {14}},
    {"Or", TPUC_OP_OR, {1, 7}, {7}},
    /* shape arithmetic on constants (Swin's W % window), folded */
    {"Mod", TPUC_OP_MOD, {10, 13}, {10, 13}},
    /* Swin's shift mask, on constants, folded (fold_range.c) */
    {"Range", TPUC_OP_RANGE, {11}, {11}},
    {"ScatterND", TPUC_OP_SCATTERND, {11, 13, 16}, {11, 13, 16}},
    {"Not", TPUC_OP_NOT, {1}, {1}},
    /* two-operand contractions as a MatMul (fold_einsum.c) */
    {"Einsum", TPUC_OP_EINSUM, {12}, {12}},
    /* recurrent layers, unrolled over the sequence (fold_rnn.c) */
    {"LSTM", TPUC_OP_LSTM, {1, 7, 14}, {7, 14}},
    {"GRU", TPUC_OP_GRU, {1, 3, 7, 14}, {7, 14}},
    {"RNN", TPUC_OP_RNN, {1, 7, 14}, {7, 14}},
};
#define TPUC_OPSET_MAX 17 /* ONNX 1.12, the schema Debian ships */

/* Names of the operators the importer knows, for messages. */
static void supported_list(char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0] && k + 1 < len; i++) {
        int w = snprintf(buf + k, len - k, "%s%s", i ? ", " : "", OPS[i].name);
        if (w < 0) break;
        k += (size_t)w;
    }
}

static void versions_text(const int *v, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; v[i] && k + 1 < len; i++) {
        int w = snprintf(buf + k, len - k, "%s%d", i ? ", " : "", v[i]);
        if (w < 0) break;
        k += (size_t)w;
    }
}

void tpuc_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
}

char *tpuc_strdup(const char *s)
{
    size_t n = strlen(s ? s : "");
    char *d = malloc(n + 1);
    if (d) memcpy(d, s ? s : "", n + 1);
    return d;
}

int tpuc_add_tensor(tpuc_graph_t *g, const char *name)
{
    if (g->nt == g->capt) {
        size_t cap = g->capt ? 2 * g->capt : 64;
        tpuc_tensor_t *t = realloc(g->t, cap * sizeof *t);
        if (!t) return -1;
        g->t = t;
        g->capt = cap;
    }
    tpuc_tensor_t *t = &g->t[g->nt];
    memset(t, 0, sizeof *t);
    t->name = tpuc_strdup(name);
    if (!t->name) return -1;
    t->producer = -1;
    t->dtype = TPUC_F32;
    t->ndim = -1; /* unknown until fold */
    return (int)g->nt++;
}

int tpuc_add_node(tpuc_graph_t *g)
{
    if (g->nn == g->capn) {
        size_t cap = g->capn ? 2 * g->capn : 32;
        tpuc_node_t *n = realloc(g->n, cap * sizeof *n);
        if (!n) return -1;
        g->n = n;
        g->capn = cap;
    }
    memset(&g->n[g->nn], 0, sizeof g->n[0]);
    return (int)g->nn++;
}

int tpuc_tensor_find(const tpuc_graph_t *g, const char *name)
{
    for (size_t i = 0; i < g->nt; i++)
        if (strcmp(g->t[i].name, name) == 0) return (int)i;
    return -1;
}

int64_t tpuc_tensor_elems(const tpuc_tensor_t *t)
{
    int64_t e = 1;
    for (int i = 0; i < t->ndim; i++) e *= t->dims[i] < 0 ? 1 : t->dims[i];
    return e;
}

const tpuc_attr_t *tpuc_attr(const tpuc_node_t *n, const char *name)
{
    for (size_t i = 0; i < n->nattrs; i++)
        if (strcmp(n->attrs[i].name, name) == 0) return &n->attrs[i];
    return NULL;
}

int64_t tpuc_attr_int(const tpuc_node_t *n, const char *name, int64_t dflt)
{
    const tpuc_attr_t *a = tpuc_attr(n, name);
    return a && a->type == 2 ? a->i : dflt;
}

void tpuc_graph_free(tpuc_graph_t *g)
{
    if (!g) return;
    for (size_t i = 0; i < g->nt; i++) {
        free(g->t[i].name);
        free(g->t[i].f);
        free(g->t[i].i);
    }
    for (size_t i = 0; i < g->nn; i++) {
        tpuc_node_t *n = &g->n[i];
        free(n->name);
        free(n->op_type);
        for (size_t k = 0; k < n->nattrs; k++) {
            free(n->attrs[k].name);
            free(n->attrs[k].s);
            free(n->attrs[k].ints);
            free(n->attrs[k].floats);
        }
        free(n->attrs);
    }
    free(g->t);
    free(g->n);
    free(g->producer);
    memset(g, 0, sizeof *g);
}

/* Checks a shape: 0..6 dims, each 0..2^31 (or -1 when allowed), product <= TPUC_MAX_ELEMS. */
static int check_dims(const char *what, const char *name, size_t nd, const int64_t *d,
                      char *err, size_t errlen)
{
    if (nd > TPUC_MAX_DIMS) {
        tpuc_err(err, errlen, "%s '%s': %zu dimensions, at most %d supported", what, name, nd,
                 TPUC_MAX_DIMS);
        return -1;
    }
    int64_t e = 1;
    for (size_t i = 0; i < nd; i++) {
        if (d[i] < 0 || d[i] > (int64_t)TPUC_MAX_ELEMS) {
            tpuc_err(err, errlen, "%s '%s': dimension %zu is %lld, expected 0 .. %lld", what,
                     name, i, (long long)d[i], (long long)TPUC_MAX_ELEMS);
            return -1;
        }
        if (d[i] && e > (int64_t)TPUC_MAX_ELEMS / d[i]) {
            tpuc_err(err, errlen, "%s '%s': more than %lld elements (absurd dimensions)", what,
                     name, (long long)TPUC_MAX_ELEMS);
            return -1;
        }
        e *= d[i];
    }
    return 0;
}

/* A new constant tensor named name with tp's dims and dtype dt (no data yet): its index, or -1
   with err (the name taken already, or memory). */
static int new_const_tensor(tpuc_graph_t *g, const Onnx__TensorProto *tp, const char *name,
                            tpuc_dtype_t dt, char *err, size_t errlen)
{
    if (tpuc_tensor_find(g, name) >= 0) {
        tpuc_err(err, errlen, "initializer '%s' defined twice", name);
        return -1;
    }
    int ti = tpuc_add_tensor(g, name);
    if (ti < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    tpuc_tensor_t *t = &g->t[ti];
    t->ndim = (int)tp->n_dims;
    for (size_t i = 0; i < tp->n_dims; i++) t->dims[i] = tp->dims[i];
    t->is_const = 1;
    t->dtype = dt;
    return ti;
}

/* A bool TensorProto (an attention mask: torch's key_padding_mask) -> a constant whose 0/1
   values are held as int64 (dtype TPUC_BOOL): raw data one byte per element, or int32_data. */
static int read_bool_tensor(tpuc_graph_t *g, const Onnx__TensorProto *tp, const char *name,
                            char *err, size_t errlen)
{
    int64_t e = 1;
    for (size_t i = 0; i < tp->n_dims; i++) e *= tp->dims[i]; /* check_dims bounded it */
    size_t have = tp->has_raw_data ? tp->raw_data.len : tp->n_int32_data;
    if (have != (size_t)e) {
        tpuc_err(err, errlen, "initializer '%s': %zu %s of bool data, the shape needs %lld",
                 name, have, tp->has_raw_data ? "bytes" : "values", (long long)e);
        return -1;
    }
    int ti = new_const_tensor(g, tp, name, TPUC_BOOL, err, errlen);
    if (ti < 0) return -1;
    tpuc_tensor_t *t = &g->t[ti];
    t->i = calloc((size_t)(e ? e : 1), sizeof *t->i);
    if (!t->i) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < e; k++)
        t->i[k] = tp->has_raw_data ? tp->raw_data.data[k] != 0 : tp->int32_data[k] != 0;
    return ti;
}

/* An int32 TensorProto (an RNN's sequence_lens) -> a constant whose values are held as int64
   (dtype TPUC_I32): raw data four bytes per element (little-endian), or int32_data. */
static int read_int32_tensor(tpuc_graph_t *g, const Onnx__TensorProto *tp, const char *name,
                             char *err, size_t errlen)
{
    int64_t e = 1;
    for (size_t i = 0; i < tp->n_dims; i++) e *= tp->dims[i]; /* check_dims bounded it */
    size_t have = tp->has_raw_data ? tp->raw_data.len : tp->n_int32_data * 4;
    if (have != (size_t)e * 4) {
        tpuc_err(err, errlen, "initializer '%s': %zu bytes of int32 data, the shape needs %lld",
                 name, have, (long long)e * 4);
        return -1;
    }
    int ti = new_const_tensor(g, tp, name, TPUC_I32, err, errlen);
    if (ti < 0) return -1;
    tpuc_tensor_t *t = &g->t[ti];
    t->i = calloc((size_t)(e ? e : 1), sizeof *t->i);
    if (!t->i) return tpuc_err(err, errlen, "out of memory"), -1;
    for (int64_t k = 0; k < e; k++) {
        int32_t v;
        if (tp->has_raw_data) memcpy(&v, tp->raw_data.data + 4 * k, 4);
        else v = tp->int32_data[k];
        t->i[k] = v;
    }
    return ti;
}

/* A TensorProto -> a constant tensor (float32 or int64 data only). */
static int read_tensor(tpuc_graph_t *g, const Onnx__TensorProto *tp, const char *name,
                       char *err, size_t errlen)
{
    if (tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL ||
        tp->n_external_data) {
        tpuc_err(err, errlen,
                 "initializer '%s': external data is not supported (save the model with its "
                 "weights inside the .onnx file)", name);
        return -1;
    }
    if (check_dims("initializer", name, tp->n_dims, tp->dims, err, errlen)) return -1;
    int dt = tp->has_data_type ? tp->data_type : 0;
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) return read_bool_tensor(g, tp, name, err, errlen);
    if (dt == ONNX__TENSOR_PROTO__DATA_TYPE__INT32) return read_int32_tensor(g, tp, name, err, errlen);
    if (dt != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT && dt != ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        tpuc_err(err, errlen,
                 "initializer '%s': data type %d, supported: 1 (float32), 7 (int64, shapes), 6 (int32: an RNN's sequence_lens) and 9 (bool, masks)",
                 name, dt);
        return -1;
    }
    int ti = new_const_tensor(g, tp, name, (tpuc_dtype_t)dt, err, errlen);
    if (ti < 0) return -1;
    tpuc_tensor_t *t = &g->t[ti];
    int64_t e = tpuc_tensor_elems(t);
    size_t es = dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? 4 : 8;
    /* the data must be there before anything is allocated for it (a header claiming 2^31
       elements over a few bytes is refused, not allocated: fuzz-onnx finding) */
    size_t have = tp->has_raw_data ? tp->raw_data.len / es
                  : dt == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ? tp->n_float_data : tp->n_int64_data;
    if ((tp->has_raw_data && tp->raw_data.len % es) || have != (size_t)e) {
        tpuc_err(err, errlen, "initializer '%s': %zu %s of data, the shape needs %lld values",
                 name, tp->has_raw_data ? tp->raw_data.len : have,
                 tp->has_raw_data ? "bytes" : "values", (long long)e);
        return -1;
    }
    void *data = calloc((size_t)(e ? e : 1), es);
    if (!data) return tpuc_err(err, errlen, "out of memory"), -1;
    if (dt == 1) t->f = data; else t->i = data;
    if (tp->has_raw_data) {
        if (tp->raw_data.len != (size_t)e * es) {
            tpuc_err(err, errlen, "initializer '%s': %zu bytes of raw data, expected %lld",
                     name, tp->raw_data.len, (long long)e * (long long)es);
            return -1;
        }
        /* little-endian, as ONNX stores it; this host is little-endian (x86, ARM) */
        if (e) memcpy(data, tp->raw_data.data, (size_t)e * es);
    } else if (dt == 1) {
        if (tp->n_float_data != (size_t)e) {
            tpuc_err(err, errlen, "initializer '%s': %zu float values, expected %lld", name,
                     tp->n_float_data, (long long)e);
            return -1;
        }
        if (e) memcpy(data, tp->float_data, (size_t)e * 4);
    } else {
        if (tp->n_int64_data != (size_t)e) {
            tpuc_err(err, errlen, "initializer '%s': %zu int64 values, expected %lld", name,
                     tp->n_int64_data, (long long)e);
            return -1;
        }
        if (e) memcpy(data, tp->int64_data, (size_t)e * 8);
    }
    return ti;
}

static const op_info_t *find_op(const char *name)
{
    for (size_t i = 0; i < sizeof OPS / sizeof OPS[0]; i++)
        if (strcmp(OPS[i].name, name) == 0) return &OPS[i];
    return NULL;
}

/* The value_info of a graph input/output: float32 tensor, its shape with a symbolic (or
   unknown) first dimension allowed as the batch. */
static int read_value_info(tpuc_graph_t *g, const Onnx__ValueInfoProto *vi, int is_input,
                           char *err, size_t errlen)
{
    const char *name = vi->name ? vi->name : "";
    const char *what = is_input ? "input" : "output";
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
        !vi->type->tensor_type) {
        tpuc_err(err, errlen, "graph %s '%s': not a tensor, only tensors are supported", what,
                 name);
        return -1;
    }
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    /* an integer input: token ids, for an embedding Gather only (fold checks its readers) */
    int ids = is_input && tt->has_elem_type &&
              (tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ||
               tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
    if (!ids && (!tt->has_elem_type || tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)) {
        tpuc_err(err, errlen, "graph %s '%s': element type %d, supported 1 (float32)%s",
                 what, name, tt->has_elem_type ? tt->elem_type : 0,
                 is_input ? ", and 7 (int64) or 6 (int32) token ids read by an embedding Gather" : "");
        return -1;
    }
    int ti = tpuc_tensor_find(g, name);
    if (ti < 0) ti = tpuc_add_tensor(g, name);
    if (ti < 0) return tpuc_err(err, errlen, "out of memory"), -1;
    tpuc_tensor_t *t = &g->t[ti];
    if (ids) t->dtype = tt->elem_type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 ? TPUC_I64 : TPUC_I32;
    if (is_input) {
        if (!tt->shape) {
            tpuc_err(err, errlen, "graph input '%s': no shape, a shape is required", name);
            return -1;
        }
        if (tt->shape->n_dim == 0 || tt->shape->n_dim > TPUC_MAX_DIMS) {
            tpuc_err(err, errlen, "graph input '%s': %zu dimensions, expected 1 .. %d", name,
                     tt->shape->n_dim, TPUC_MAX_DIMS);
            return -1;
        }
        t->ndim = (int)tt->shape->n_dim;
        for (size_t i = 0; i < tt->shape->n_dim; i++) {
            const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
            if (d && d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
                if (d->dim_value < 1 || d->dim_value > (1 << 24)) {
                    tpuc_err(err, errlen,
                             "graph input '%s': dimension %zu is %lld, expected 1 .. %d",
                             name, i, (long long)d->dim_value, 1 << 24);
                    return -1;
                }
                t->dims[i] = d->dim_value;
            } else if (i == 0) {
                t->dims[i] = -1; /* the symbolic batch */
            } else {
                tpuc_err(err, errlen,
                         "graph input '%s': dimension %zu is symbolic ('%s'); only the first "
                         "(batch) dimension may be", name, i,
                         d && d->value_case ==
                                 ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                                 d->dim_param ? d->dim_param : "?");
                return -1;
            }
        }
        if (check_dims("graph input", name, 0, NULL, err, errlen)) return -1;
        t->is_input = 1;
    } else {
        t->is_output = 1;
    }
    return ti;
}

static int read_attr(tpuc_graph_t *g, tpuc_node_t *n, const Onnx__AttributeProto *a,
                     tpuc_attr_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->tensor = -1;
    out->name = tpuc_strdup(a->name ? a->name : "");
    if (!out->name) return tpuc_err(err, errlen, "out of memory"), -1;
    if (a->ref_attr_name && a->ref_attr_name[0]) {
        tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' refers to a function attribute, "
                 "not supported", n->name, n->op_type, out->name);
        return -1;
    }
    out->type = a->has_type ? (int)a->type : 0;
    switch (out->type) {
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: out->f = a->f; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: out->i = a->i; break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING:
        out->s = malloc(a->s.len + 1);
        if (!out->s) return tpuc_err(err, errlen, "out of memory"), -1;
        if (a->s.len) memcpy(out->s, a->s.data, a->s.len);
        out->s[a->s.len] = 0;
        if (strlen(out->s) != a->s.len) {
            tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' holds a NUL byte", n->name,
                     n->op_type, out->name);
            return -1;
        }
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: {
        /* held as one string, the values joined by commas (an RNN's activations) */
        if (a->n_strings > 64) {
            tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' has %zu values, at most 64 "
                     "supported", n->name, n->op_type, out->name, a->n_strings);
            return -1;
        }
        size_t len = 1;
        for (size_t k = 0; k < a->n_strings; k++) len += a->strings[k].len + 1;
        out->s = malloc(len);
        if (!out->s) return tpuc_err(err, errlen, "out of memory"), -1;
        size_t o = 0;
        for (size_t k = 0; k < a->n_strings; k++) {
            const ProtobufCBinaryData *v = &a->strings[k];
            if (v->len && (memchr(v->data, 0, v->len) || memchr(v->data, ',', v->len))) {
                tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' holds a NUL byte or a comma",
                         n->name, n->op_type, out->name);
                return -1;
            }
            if (k) out->s[o++] = ',';
            if (v->len) memcpy(out->s + o, v->data, v->len);
            o += v->len;
        }
        out->s[o] = 0;
        break;
    }
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS:
        if (a->n_ints > 64) {
            tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' has %zu values, at most 64 "
                     "supported", n->name, n->op_type, out->name, a->n_ints);
            return -1;
        }
        out->nints = a->n_ints;
        out->ints = malloc((a->n_ints + 1) * sizeof *out->ints);
        if (!out->ints) return tpuc_err(err, errlen, "out of memory"), -1;
        if (a->n_ints) memcpy(out->ints, a->ints, a->n_ints * sizeof *out->ints);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS:
        if (a->n_floats > 64) {
            tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' has %zu values, at most 64 "
                     "supported", n->name, n->op_type, out->name, a->n_floats);
            return -1;
        }
        out->nfloats = a->n_floats;
        out->floats = malloc((a->n_floats + 1) * sizeof *out->floats);
        if (!out->floats) return tpuc_err(err, errlen, "out of memory"), -1;
        if (a->n_floats) memcpy(out->floats, a->floats, a->n_floats * sizeof *out->floats);
        break;
    case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: {
        if (!a->t) {
            tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' has no tensor", n->name,
                     n->op_type, out->name);
            return -1;
        }
        char nm[300];
        snprintf(nm, sizeof nm, "%s/%s", n->name, out->name);
        int ti = read_tensor(g, a->t, nm, err, errlen);
        if (ti < 0) return -1;
        out->tensor = ti;
        break;
    }
    default:
        tpuc_err(err, errlen, "node '%s' (%s): attribute '%s' of type %d is not supported",
                 n->name, n->op_type, out->name, out->type);
        return -1;
    }
    return 0;
}

static int resolve_version(const op_info_t *oi, int64_t opset)
{
    int v = 0;
    for (int i = 0; oi->hist[i]; i++)
        if (oi->hist[i] <= opset) v = oi->hist[i];
    return v;
}

static int version_ok(const op_info_t *oi, int v)
{
    for (int i = 0; oi->impl[i]; i++)
        if (oi->impl[i] == v) return 1;
    return 0;
}

int tpuc_onnx_read(const uint8_t *buf, size_t len, tpuc_graph_t *g, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    if (len == 0) {
        tpuc_err(err, errlen, "empty file, expected an ONNX model (protobuf ModelProto)");
        return -1;
    }
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) {
        tpuc_err(err, errlen, "not a valid ONNX model: the protobuf does not decode (truncated "
                 "or not a ModelProto)");
        return -1;
    }
    int rc = -1;
    int *wide_ins = NULL; /* a wide Concat's inputs (concat_wide.c) */
    if (!m->graph) {
        tpuc_err(err, errlen, "not an ONNX model: no graph");
        goto out;
    }
    g->producer = tpuc_strdup(m->producer_name ? m->producer_name : "");
    g->opset = -1;
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[i];
        if (!o) continue;
        if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0)
            g->opset = o->has_version ? o->version : 0;
    }
    if (g->opset < 0) {
        tpuc_err(err, errlen, "the model imports no version of the default ONNX domain "
                 "(opset_import), expected an opset 1 .. %d", TPUC_OPSET_MAX);
        goto out;
    }
    if (g->opset < 1 || g->opset > TPUC_OPSET_MAX) {
        tpuc_err(err, errlen, "opset %lld: out of range, supported 1 .. %d (ONNX 1.12); each "
                 "node's operator version is then checked", (long long)g->opset,
                 TPUC_OPSET_MAX);
        goto out;
    }
    const Onnx__GraphProto *gp = m->graph;
    if (gp->n_sparse_initializer) {
        tpuc_err(err, errlen, "sparse initializers are not supported");
        goto out;
    }
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp || !tp->name || !tp->name[0]) {
            tpuc_err(err, errlen, "initializer %zu has no name", i);
            goto out;
        }
        if (read_tensor(g, tp, tp->name, err, errlen) < 0) goto out;
    }
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        if (!vi || !vi->name) continue;
        int ti = tpuc_tensor_find(g, vi->name);
        if (ti >= 0 && g->t[ti].is_const) continue; /* an initializer listed as input */
        if (g->ninputs == TPUC_MAX_IO) {
            tpuc_err(err, errlen, "more than %d graph inputs", TPUC_MAX_IO);
            goto out;
        }
        ti = read_value_info(g, vi, 1, err, errlen);
        if (ti < 0) goto out;
        g->inputs[g->ninputs++] = ti;
    }
    if (g->ninputs != 1) {
        tpuc_err(err, errlen, "the graph has %d inputs that are not initializers, expected 1 "
                 "(the weights must be initializers: the MXU holds them at compile time)",
                 g->ninputs);
        goto out;
    }
    if (gp->n_node > 100000) {
        tpuc_err(err, errlen, "%zu nodes, at most 100000 supported", gp->n_node);
        goto out;
    }
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *np = gp->node[i];
        if (!np) continue;
        int ni = tpuc_add_node(g);
        if (ni < 0) { tpuc_err(err, errlen, "out of memory"); goto out; }
        tpuc_node_t *n = &g->n[ni];
        n->op_type = tpuc_strdup(np->op_type ? np->op_type : "");
        if (np->name && np->name[0]) {
            n->name = tpuc_strdup(np->name);
        } else {
            char nm[200];
            snprintf(nm, sizeof nm, "%.150s_%zu", n->op_type, i);
            n->name = tpuc_strdup(nm);
        }
        if (!n->op_type || !n->name) { tpuc_err(err, errlen, "out of memory"); goto out; }
        if (np->domain && np->domain[0] && strcmp(np->domain, "ai.onnx") != 0) {
            tpuc_err(err, errlen, "node '%s' (%s): domain '%s' is not supported, only the "
                     "default ONNX domain", n->name, n->op_type, np->domain);
            goto out;
        }
        const op_info_t *oi = find_op(n->op_type);
        if (!oi) {
            char list[600];
            supported_list(list, sizeof list);
            tpuc_err(err, errlen, "node '%s': operator '%s' is not supported; supported: %s",
                     n->name, n->op_type, list);
            goto out;
        }
        n->op = oi->op;
        n->version = resolve_version(oi, g->opset);
        if (!version_ok(oi, n->version)) {
            char list[100];
            versions_text(oi->impl, list, sizeof list);
            if (n->version == 0) { /* the operator came after the model's opset */
                tpuc_err(err, errlen, "node '%s' (%s): the operator does not exist at opset %lld "
                         "(the model's import); supported versions: %s", n->name, n->op_type,
                         (long long)g->opset, list);
                goto out;
            }
            tpuc_err(err, errlen, "node '%s' (%s): opset %lld resolves to %s-%d, which is not "
                     "supported; supported versions: %s", n->name, n->op_type,
                     (long long)g->opset, n->op_type, n->version, list);
            goto out;
        }
        /* a Concat of more inputs than a node holds: a tree of Concats (concat_wide.c) */
        int wide = n->op == TPUC_OP_CONCAT && np->n_input > TPUC_MAX_IO && np->n_input <= 100000;
        if ((np->n_input > TPUC_MAX_IO && !wide) || np->n_output > TPUC_MAX_IO) {
            tpuc_err(err, errlen, "node '%s' (%s): %zu inputs and %zu outputs, at most %d each",
                     n->name, n->op_type, np->n_input, np->n_output, TPUC_MAX_IO);
            goto out;
        }
        n->nattrs = np->n_attribute;
        if (n->nattrs > 64) {
            tpuc_err(err, errlen, "node '%s' (%s): %zu attributes, at most 64", n->name,
                     n->op_type, n->nattrs);
            goto out;
        }
        n->attrs = calloc(n->nattrs + 1, sizeof *n->attrs);
        if (!n->attrs) { tpuc_err(err, errlen, "out of memory"); goto out; }
        for (size_t k = 0; k < np->n_attribute; k++) {
            if (!np->attribute[k]) { tpuc_err(err, errlen, "node '%s': empty attribute", n->name); goto out; }
            /* n may move when read_attr adds a tensor? No: tensors and nodes are separate arrays. */
            if (read_attr(g, &g->n[ni], np->attribute[k], &g->n[ni].attrs[k], err, errlen))
                goto out;
        }
        n = &g->n[ni];
        n->nin = (int)np->n_input;
        free(wide_ins);
        wide_ins = wide ? malloc(np->n_input * sizeof *wide_ins) : NULL;
        if (wide && !wide_ins) { tpuc_err(err, errlen, "out of memory"); goto out; }
        int *ins = wide ? wide_ins : n->in;
        for (size_t k = 0; k < np->n_input; k++) {
            const char *in = np->input[k] ? np->input[k] : "";
            if (!in[0] && wide) {
                tpuc_err(err, errlen, "node '%s' (%s): input %zu is empty", n->name, n->op_type, k);
                goto out;
            }
            if (!in[0]) { n->in[k] = -1; continue; }
            int ti = tpuc_tensor_find(g, in);
            if (ti < 0) {
                tpuc_err(err, errlen, "node '%s' (%s): input '%s' is not produced by any earlier "
                         "node, initializer or graph input (nodes must be in topological "
                         "order)", n->name, n->op_type, in);
                goto out;
            }
            ins[k] = ti;
            g->t[ti].nuses++;
        }
        n->nout = (int)np->n_output;
        for (size_t k = 0; k < np->n_output; k++) {
            const char *o = np->output[k] ? np->output[k] : "";
            if (!o[0]) { n->out[k] = -1; continue; }
            if (tpuc_tensor_find(g, o) >= 0) {
                tpuc_err(err, errlen, "node '%s' (%s): output '%s' is defined twice", n->name,
                         n->op_type, o);
                goto out;
            }
            int ti = tpuc_add_tensor(g, o);
            if (ti < 0) { tpuc_err(err, errlen, "out of memory"); goto out; }
            n = &g->n[ni];
            n->out[k] = ti;
            g->t[ti].producer = ni;
        }
        if (wide) {
            if (tpuc_concat_tree(g, ni, ins, np->n_input, err, errlen)) goto out;
        }
    }
    for (size_t i = 0; i < gp->n_output; i++) {
        const Onnx__ValueInfoProto *vi = gp->output[i];
        if (!vi || !vi->name) continue;
        int ti = tpuc_tensor_find(g, vi->name);
        if (ti < 0) {
            tpuc_err(err, errlen, "graph output '%s' is not produced by any node", vi->name);
            goto out;
        }
        if (g->noutputs == TPUC_MAX_IO) {
            tpuc_err(err, errlen, "more than %d graph outputs", TPUC_MAX_IO);
            goto out;
        }
        if (read_value_info(g, vi, 0, err, errlen) < 0) goto out;
        g->outputs[g->noutputs++] = ti;
    }
    if (g->noutputs != 1) {
        tpuc_err(err, errlen, "the graph has %d outputs, expected 1", g->noutputs);
        goto out;
    }
    rc = 0;
out:
    free(wide_ins);
    onnx__model_proto__free_unpacked(m, NULL);
    return rc;
}

int tpuc_onnx_read_file(const char *path, tpuc_graph_t *g, char *err, size_t errlen)
{
    memset(g, 0, sizeof *g);
    FILE *f = fopen(path, "rb");
    if (!f) {
        tpuc_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* Bounded read: a model is at most 2 GiB (protobuf's own limit). */
    const size_t cap_max = (size_t)2 << 30;
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) { fclose(f); tpuc_err(err, errlen, "out of memory"); return -1; }
    for (;;) {
        if (len == cap) {
            if (cap >= cap_max) {
                free(buf); fclose(f);
                tpuc_err(err, errlen, "%s: larger than 2 GiB, the most a protobuf may be", path);
                return -1;
            }
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) { free(buf); fclose(f); tpuc_err(err, errlen, "out of memory"); return -1; }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + len, 1, cap - len, f);
        len += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        tpuc_err(err, errlen, "%s: read error", path);
        return -1;
    }
    char e2[512];
    int rc = tpuc_onnx_read(buf, len, g, e2, sizeof e2);
    free(buf);
    if (rc) tpuc_err(err, errlen, "%s: %s", path, e2);
    return rc;
}
