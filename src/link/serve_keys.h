// The Serving tab's part of a link (config_link.h LinkServeEdits): "serve.<field>=value" keys, read and written
// from one table so the encoder and the decoder cannot disagree on a name.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "link/config_link.h"

namespace sc {

// A number as a link writes it: the shortest of %.15g and %.17g that reads back as the same double.
std::string LinkNumber(double v);

// Every serve key ("serve.tp", ...), in the order they are written.
std::vector<std::string> ServeKeys();
// Sets the field of `key` ("serve.tp") from `value`; throws sc::Error naming the key for a bad value or an
// unknown field. The caller has checked that key starts with "serve.".
void SetServeKey(LinkServeEdits& edits, const std::string& key, std::string_view value);
// Calls put(key, value) for every field that is set.
void PutServeKeys(const LinkServeEdits& edits, const std::function<void(std::string_view, const std::string&)>& put);

}  // namespace sc
