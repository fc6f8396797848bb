#include "graph/graph.h"

namespace sc {

const char* NameOf(OpKind k) {
    switch (k) {
        case OpKind::matmul: return "matmul";
        case OpKind::attention: return "attention";
        case OpKind::elementwise: return "elementwise";
        case OpKind::gather: return "gather";
        case OpKind::collective: return "collective";
        case OpKind::scan: return "scan";
    }
    return "?";
}

const char* NameOf(Group g) {
    switch (g) {
        case Group::none: return "none";
        case Group::tp: return "tp";
        case Group::cp: return "cp";
        case Group::ep: return "ep";
        case Group::dp: return "dp";
        case Group::pp: return "pp";
    }
    return "?";
}

const char* NameOf(Collective c) {
    switch (c) {
        case Collective::all_reduce: return "all_reduce";
        case Collective::all_gather: return "all_gather";
        case Collective::reduce_scatter: return "reduce_scatter";
        case Collective::all_to_all: return "all_to_all";
    }
    return "?";
}

const char* NameOf(BlockKind k) {
    switch (k) {
        case BlockKind::embedding: return "embedding";
        case BlockKind::dense_layer: return "dense_layer";
        case BlockKind::moe_layer: return "moe_layer";
        case BlockKind::dense_window_layer: return "dense_window_layer";
        case BlockKind::moe_window_layer: return "moe_window_layer";
        case BlockKind::head: return "head";
        case BlockKind::mamba_layer: return "mamba_layer";
        case BlockKind::attention_layer: return "attention_layer";
        case BlockKind::mlp_layer: return "mlp_layer";
        case BlockKind::moe_mlp_layer: return "moe_mlp_layer";
    }
    return "?";
}

}  // namespace sc
