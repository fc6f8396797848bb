// The Serving tab's description in a link (link/config_link.h LinkServeEdits): what the tab's fields changed
// from the serving preset it started from, and those changes applied again to that preset.
#pragma once
#include "inference/serving_config.h"
#include "link/config_link.h"

namespace sc::app {

// The fields of `now` that differ from `base`, as the tab edits them; ApplyServeEdits(ServeEditsOf(b, n), b') with
// b' == b gives back n on every field the tab edits.
LinkServeEdits ServeEditsOf(const ServingConfig& base, const ServingConfig& now);
// Prefix caching on or off as the tab sets it: off drops the second tier too (a host tier or a remote store holds
// evicted prefixes, so it needs the cache), on restores `preset`'s tier.
inline void SetPrefixCaching(ServingConfig& c, bool on, const EngineConfig& preset) {
    c.engine.prefix_caching = on;
    c.engine.host_cache_gib = on ? preset.host_cache_gib : 0;
    c.engine.remote_cache_gib = on ? preset.remote_cache_gib : 0;
}
// Sets the edited fields of `c` (a copy of the preset's description), the compute format following the weights
// as the tab sets it.
void ApplyServeEdits(const LinkServeEdits& e, ServingConfig& c);

}  // namespace sc::app
