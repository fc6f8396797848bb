#include "parallel/pipeline_layout.h"

#include <cctype>

#include "config/error.h"

namespace sc {

namespace {

[[noreturn]] void Bad(const std::string& why) { throw Error("layout", why); }

// The repeat count after a '*' at `pos` (advanced past it).
size_t Count(std::string_view s, size_t& pos) {
    if (pos >= s.size() || s[pos] != '*') Bad("a group (...) must be followed by *n");
    ++pos;
    size_t n = 0, digits = 0;
    while (pos < s.size() && std::isdigit(static_cast<unsigned char>(s[pos]))) {
        n = n * 10 + static_cast<size_t>(s[pos++] - '0');
        if (++digits > 7) Bad("a repeat count above 9999999");
    }
    if (digits == 0) Bad("'*' must be followed by a repeat count");
    return n;
}

void Append(std::string& out, std::string_view piece, size_t times) {
    if (piece.size() * times > kMaxLayoutChars - out.size())
        Bad("more than " + std::to_string(kMaxLayoutChars) + " characters once its repeats are unrolled");
    for (size_t i = 0; i < times; ++i) out += piece;
}

// Megatron's two passes: groups "(...)*n" (not nested) first, then "x*n" on the result.
std::string Unroll(std::string_view text) {
    std::string groups;
    for (size_t i = 0; i < text.size();) {
        const char c = text[i];
        if (c == ',') {  // cosmetic
            ++i;
            continue;
        }
        if (c == ')') Bad("')' without its '('");
        if (c != '(') {
            Append(groups, text.substr(i, 1), 1);
            ++i;
            continue;
        }
        const size_t close = text.find(')', i + 1);
        if (close == std::string_view::npos) Bad("'(' without its ')'");
        std::string inner;
        for (char d : text.substr(i + 1, close - i - 1)) {
            if (d == '(') Bad("groups do not nest (Megatron's layout has none)");
            if (d != ',') inner += d;
        }
        if (inner.empty()) Bad("an empty group ()");
        i = close + 1;
        Append(groups, inner, Count(text, i));
    }
    std::string out;
    for (size_t i = 0; i < groups.size();) {
        const char c = groups[i++];
        if (c == '*') Bad("'*' must follow a layer character or a group");
        const size_t times = i < groups.size() && groups[i] == '*' ? Count(groups, i) : 1;
        Append(out, std::string_view(&c, 1), times);
    }
    return out;
}

}  // namespace

PipelineLayout ParsePipelineLayout(std::string_view text) {
    const std::string s = Unroll(text);
    PipelineLayout out;
    int stage = 0, layers = 0, embeddings = 0, losses = 0;
    bool loss_here = false;
    auto end_stage = [&] {
        // A stage of only the embedding or only the loss is Megatron's account_for_embedding_in_pipeline_split /
        // account_for_loss_in_pipeline_split, where each counts as a layer's slot.
        // An MTP module still needs a layer beside it (a standalone MTP stage is not modelled).
        const bool embedding_only = stage == 0 && embeddings == 1, loss_only = loss_here && out.mtp == 0;
        if (layers == 0 && !embedding_only && !loss_only)
            Bad("virtual stage " + std::to_string(stage) +
                " holds no transformer layer 't' (only the first may hold just the embedding 'E', and only the last "
                "just the loss 'L')");
        out.layers.push_back(layers);
        layers = 0, ++stage;
    };
    for (char c : s) {
        if (loss_here && c != '|') Bad("nothing may follow the loss 'L': it ends the last virtual stage");
        switch (c) {
            case 't': ++layers; break;
            case 'E':
                if (stage != 0 || layers != 0 || ++embeddings > 1)
                    Bad("the embedding 'E' comes once, first in the first virtual stage");
                break;
            case 'm': ++out.mtp; break;
            case 'L':
                if (++losses > 1) Bad("the loss 'L' comes once");
                loss_here = true;
                break;
            case '|':
                if (loss_here) Bad("the loss 'L' must be in the last virtual stage");
                if (out.mtp > 0)
                    Bad("the MTP modules 'm' run with the loss in the last virtual stage here (Megatron-Bridge's "
                        "default: colocated); a standalone MTP stage is not modelled");
                end_stage();
                break;
            default:
                Bad(std::string("unknown character '") + (std::isprint(static_cast<unsigned char>(c)) ? c : '?') +
                    "': valid are E (embedding), t (transformer layer), m (MTP module), L (loss), | (stage end), "
                    "(...)*n and x*n (repeats)");
        }
    }
    end_stage();
    return out;
}

std::string PipelineLayoutString(const std::vector<int>& layers, int mtp) {
    const size_t n = layers.size();
    // Appends "x" or "x*count", nothing for count 0.
    auto repeat = [](std::string& out, char x, int count) {
        if (count == 0) return;  // a stage of only the embedding or only the loss
        out.push_back(x);
        if (count > 1) out.append("*").append(std::to_string(count));
    };
    auto stage = [&](std::string& out, size_t i) {
        if (i == 0) out.push_back('E');
        repeat(out, 't', layers[i]);
        if (i + 1 < n) return;
        if (mtp > 0) repeat(out, 'm', mtp);
        out.push_back('L');
    };
    std::string out;
    for (size_t i = 0; i < n;) {
        size_t run = 1;  // only middle stages repeat: the first holds E, the last L
        if (i > 0)
            while (i + run + 1 < n && layers[i + run] == layers[i]) ++run;
        if (run > 1) out.push_back('(');
        stage(out, i);
        if (run > 1) out.append("|)*").append(std::to_string(run));  // the group ends its last stage
        else if (i + 1 < n) out.push_back('|');
        i += run;
    }
    return out;
}

}  // namespace sc
