// Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout; megatron/core/transformer/
// pipeline_parallel_layer_layout.py), the `layout=` key of the parallel spec: one string that says which layers
// each pipeline position (virtual stage, in model order) holds, e.g. DeepSeek-V3 on PP4 x VP4 in Megatron-Bridge's
// recipe: "Et*4|(t*4|)*14tmL". E is the embedding, t a transformer layer, m a multi-token-prediction module,
// L the loss (final norm, LM head, cross-entropy); | ends a virtual stage; (x)*n and x*n repeat; commas are
// cosmetic, as in Megatron.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace sc {

struct PipelineLayout {
    std::vector<int> layers;  // transformer layers of each pipeline position, in model order
    int mtp = 0;              // MTP modules ('m'), all on the last position with the loss
};

// Throws sc::Error on `layout` naming what is wrong: an unknown character, an unclosed group, E not at the start
// of the first stage, L not in the last, an 'm' away from the loss (the model runs the MTP modules with the
// loss), a stage without a transformer layer (but for a first stage of only the embedding and a last of only the
// loss: Megatron's account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split, which count each
// as a layer's slot), or more than kMaxLayoutChars characters once unrolled.
PipelineLayout ParsePipelineLayout(std::string_view text);

// The canonical string, repeated stages grouped: {4, 4, 4, 1} with one MTP module -> "Et*4|(t*4|)*2tmL".
std::string PipelineLayoutString(const std::vector<int>& layers, int mtp);

inline constexpr size_t kMaxLayoutChars = 1 << 22;  // unrolled: far beyond any model's layers and stages

}  // namespace sc
