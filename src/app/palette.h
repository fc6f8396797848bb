// Okabe & Ito's palette (2008, "Color Universal Design"), distinguishable under the common colour-vision
// deficiencies, for every panel's bars and boxes.
#pragma once
#include "imgui.h"

namespace sc::app {

constexpr ImU32 kBlue = IM_COL32(0, 114, 178, 255), kSky = IM_COL32(86, 180, 233, 255),
                kOrange = IM_COL32(230, 159, 0, 255), kYellow = IM_COL32(240, 228, 66, 255),
                kPurple = IM_COL32(204, 121, 167, 255), kGreen = IM_COL32(0, 158, 115, 255),
                kGrey = IM_COL32(153, 153, 153, 255), kVermillion = IM_COL32(213, 94, 0, 255),
                kWhite = IM_COL32(230, 230, 230, 255);

}  // namespace sc::app
