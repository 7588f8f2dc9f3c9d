// Which part, view and channels of a plate are what (src/plate_channels.h), on in-memory ImageSpecs: no file is
// written or read. Bare RGB(A), grey, unnamed channels, layers and input.layer, parts by index, name and view,
// single-part multi-view files by OpenEXR's naming rule (ImfMultiView.h), own and other depth per view, numeric
// layer and part names, and the messages that list what a file has.
#include "plate_channels.h"

#include "depthbatch/error.h"
#include "support/test_support.h"

#include <gtest/gtest.h>
#include <OpenImageIO/imageio.h>

#include <string>
#include <vector>

using namespace depthbatch;
using depthbatch::test::contains;
using depthbatch::test::expect_error;

namespace {

using Names = std::vector<std::string>;
using Indices = std::vector<int>;

/// A part's header: half channels named `names`, as OIIO's EXR reader gives it (alpha_channel at the channel
/// named A, else none), with the part's `name` and `view` attributes and a multiView list when given.
OIIO::ImageSpec part(const Names& names, const std::string& name = "", const std::string& view = "",
                     const Names& multi_view = {}) {
    OIIO::ImageSpec spec(8, 4, static_cast<int>(names.size()), OIIO::TypeDesc::HALF);
    spec.channelnames = names;
    spec.alpha_channel = -1;
    for (size_t c = 0; c < names.size(); ++c)
        if (names[c] == "A") spec.alpha_channel = static_cast<int>(c);
    if (!name.empty()) spec.attribute("name", name);
    if (!view.empty()) spec.attribute("view", view);
    if (!multi_view.empty()) {
        std::vector<OIIO::ustring> v(multi_view.begin(), multi_view.end());
        spec.attribute("multiView", OIIO::TypeDesc(OIIO::TypeDesc::STRING, static_cast<int>(v.size())), v.data());
    }
    return spec;
}

InputSettings input(const std::string& part = "0", const std::string& view = "", const std::string& layer = "") {
    InputSettings in;
    in.part = part;
    in.view = view;
    in.layer = layer;
    return in;
}

/// Everything decided for a file, in plate_reader's order: part, view, channel roles.
struct Decided {
    int part = -1;
    ViewChoice view;
    ChannelRoles roles;
};
Decided decide(const std::vector<OIIO::ImageSpec>& specs, const InputSettings& job = input()) {
    Decided d;
    d.part = choose_part(specs, job);
    d.view = choose_view(specs, d.part, job.view);
    d.roles = assign_channels(specs[static_cast<size_t>(d.part)], d.view.views, d.view.view, job.layer);
    return d;
}
ChannelRoles roles(const Names& names, const std::string& layer = "") {
    return decide({part(names)}, input("0", "", layer)).roles;
}
/// The channels feeding R,G,B,A, by name ("-" for none).
Names rgba(const OIIO::ImageSpec& spec, const ChannelRoles& r) {
    auto name = [&](int c) { return c >= 0 ? spec.channelnames[static_cast<size_t>(c)] : std::string("-"); };
    return {name(r.r), name(r.g), name(r.b), name(r.a)};
}
Names rgba(const Names& names, const std::string& layer = "") { return rgba(part(names), roles(names, layer)); }

/// The multi-view part of a stereo single-part file: the default view (right) without a view component, the
/// left view with one, per-view depth named Z and depth.Z, and a few channels of layers that are no view.
const Names kStereo = {"R",           "G",
                       "B",           "A",
                       "Z",           "depth.Z",
                       "left.R",      "left.G",
                       "left.B",      "left.A",
                       "left.Z",      "depth.left.Z",
                       "forward.u",   "forward.left.u",
                       "disparityL.x"};
OIIO::ImageSpec stereo() { return part(kStereo, "", "", {"right", "left"}); }
int index_of(const Names& names, const std::string& name) {
    for (size_t i = 0; i < names.size(); ++i)
        if (names[i] == name) return static_cast<int>(i);
    return -1;
}
Indices indices(const Names& names, const Names& wanted) {
    Indices out;
    for (const auto& w : wanted) out.push_back(index_of(names, w));
    return out;
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------------------

TEST(PlateChannels, ChannelNamesSplitIntoViewAndBaseByTheComponentBeforeTheLast) {
    const Names views = {"right", "left"};
    auto parsed = [&](const std::string& name) {
        const ChannelName n = parse_channel(name, views);
        return n.view + " | " + n.base;
    };
    EXPECT_EQ(parsed("left.R"), "left | R");
    EXPECT_EQ(parsed("right.R"), "right | R") << "the default view may be named too";
    EXPECT_EQ(parsed("R"), "right | R") << "no view component: the default view (the first)";
    EXPECT_EQ(parsed("depth.left.Z"), "left | depth.Z");
    EXPECT_EQ(parsed("depth.Z"), "right | depth.Z") << "'depth' is no view";
    EXPECT_EQ(parsed("forward.left.u"), "left | forward.u");
    EXPECT_EQ(parsed("left.forward.u"), "right | left.forward.u") << "only the component before the last names a view";
    EXPECT_EQ(parsed("left"), "right | left") << "a one-component name has no view component";
    EXPECT_EQ(parsed("a.b.left.c"), "left | a.b.c");
    // A file without views: every name as it is, no view.
    EXPECT_EQ(parse_channel("left.R", {}).view, "");
    EXPECT_EQ(parse_channel("left.R", {}).base, "left.R");

    EXPECT_EQ(split_channel_name("ViewLayer.Combined.R"), (Names{"ViewLayer", "Combined", "R"}));
    EXPECT_EQ(split_channel_name("R"), (Names{"R"}));
    EXPECT_EQ(split_channel_name("a..b"), (Names{"a", "", "b"}));
    EXPECT_EQ(join_names({"a", "b", "c"}), "a, b, c");
    EXPECT_EQ(join_names({"a", "b"}, "/"), "a/b");
    EXPECT_TRUE(is_depth_name("Z"));
    EXPECT_TRUE(is_depth_name("depth.Z"));
    EXPECT_FALSE(is_depth_name("ViewLayer.Depth.Z")) << "only Z and depth.Z are depth; other layers' Z are channels";
    EXPECT_FALSE(is_depth_name("z"));
}

TEST(PlateChannels, ColourAndChromaAreFoundInAnyLayerOrView) {
    EXPECT_TRUE(has_colour(part({"R", "G", "B"})));
    EXPECT_TRUE(has_colour(part({"left.R", "left.G", "left.B"})));
    EXPECT_TRUE(has_colour(part({"Y"})));
    EXPECT_TRUE(has_colour(part({"Y", "RY", "BY"})));
    EXPECT_FALSE(has_colour(part({"R", "G", "Z"})));
    EXPECT_FALSE(has_colour(part({"Z"})));
    EXPECT_TRUE(has_chroma_channels(part({"Y", "RY", "BY"})));
    EXPECT_TRUE(has_chroma_channels(part({"left.Y", "left.RY", "left.BY"})));
    EXPECT_FALSE(has_chroma_channels(part({"Y"})));
    EXPECT_FALSE(has_chroma_channels(part({"Y", "RY"})));
}

// ---- channel roles of one part -----------------------------------------------------------------------------

TEST(PlateChannels, BareRgbAndRgbaInAnyOrderAndSpelling) {
    EXPECT_EQ(rgba({"R", "G", "B"}), (Names{"R", "G", "B", "-"}));
    EXPECT_EQ(rgba({"R", "G", "B", "A"}), (Names{"R", "G", "B", "A"}));
    EXPECT_EQ(rgba({"A", "B", "G", "R"}), (Names{"R", "G", "B", "A"})) << "by name, not by position";
    EXPECT_EQ(rgba({"r", "g", "b", "a"}), (Names{"r", "g", "b", "a"}));
    EXPECT_EQ(rgba({"red", "green", "blue", "alpha"}), (Names{"red", "green", "blue", "alpha"}));
    // OIIO's alpha channel (a TIFF's extra sample) counts when no channel is named A.
    OIIO::ImageSpec tiff = part({"R", "G", "B", "Matte"});
    tiff.alpha_channel = 3;
    EXPECT_EQ(rgba(tiff, assign_channels(tiff, {}, "", "")), (Names{"R", "G", "B", "Matte"}));

    const ChannelRoles z = roles({"R", "G", "B", "A", "Z"});
    EXPECT_EQ(z.own_depth, (Indices{4}));
    EXPECT_TRUE(z.other_depth.empty());
    const ChannelRoles both = roles({"depth.Z", "R", "G", "B", "Z"});
    EXPECT_EQ(both.own_depth, (Indices{0, 4})) << "Z and depth.Z are both the plate's own depth";
    EXPECT_EQ(both.r, 1);
    EXPECT_TRUE(roles({"R", "G", "B"}).own_depth.empty());
}

TEST(PlateChannels, GreyAndUnnamedChannels) {
    EXPECT_EQ(rgba({"Y"}), (Names{"Y", "Y", "Y", "-"}));
    EXPECT_EQ(rgba({"Y", "A"}), (Names{"Y", "Y", "Y", "A"}));
    for (const char* grey : {"y", "L", "gray", "grey"}) EXPECT_EQ(rgba({grey}), (Names{grey, grey, grey, "-"})) << grey;
    EXPECT_EQ(rgba({"G"}), (Names{"G", "G", "G", "-"})) << "a lone channel is grey (WideFloatRange.exr's G)";
    EXPECT_EQ(rgba({"u", "v"}), (Names{"u", "u", "u", "-"})) << "of two unnamed channels, the first is grey";
    EXPECT_EQ(rgba({"u", "A"}), (Names{"u", "u", "u", "A"})) << "grey + alpha";
    EXPECT_EQ(rgba({"c0", "c1", "c2"}), (Names{"c0", "c1", "c2", "-"})) << "three unnamed channels, in order";
    EXPECT_EQ(rgba({"Z", "depth.Z", "mask"}), (Names{"mask", "mask", "mask", "-"})) << "depth is never colour";
    EXPECT_EQ(rgba({"R", "G", "Y"}), (Names{"Y", "Y", "Y", "-"})) << "an incomplete R,G,B falls back to grey";

    // Four unnamed channels, or depth alone: nothing to make an image of.
    std::string msg = expect_error<InputError>([&] { roles({"c0", "c1", "c2", "c3"}); });
    EXPECT_EQ(msg, "no R,G,B or Y channels to make an image of among 4 channels (c0, c1, c2, c3)");
    msg = expect_error<InputError>([&] { roles({"Z"}); });
    EXPECT_EQ(msg, "no R,G,B or Y channels to make an image of among 1 channels (Z)");
}

TEST(PlateChannels, TheOnlyLayerHoldingRgbIsUsedAndInputLayerChoosesAmongSeveral) {
    // Blender's multilayer EXR: one layer with R,G,B.
    const Names blender = {"ViewLayer.Combined.R", "ViewLayer.Combined.G", "ViewLayer.Combined.B",
                           "ViewLayer.Combined.A", "ViewLayer.Depth.Z"};
    EXPECT_EQ(rgba(blender),
              (Names{"ViewLayer.Combined.R", "ViewLayer.Combined.G", "ViewLayer.Combined.B", "ViewLayer.Combined.A"}));
    EXPECT_TRUE(roles(blender).own_depth.empty()) << "ViewLayer.Depth.Z is not named Z or depth.Z";
    // Bare R,G,B win over a layer; a layer without B is no layer.
    EXPECT_EQ(rgba({"beauty.R", "beauty.G", "beauty.B", "R", "G", "B"}), (Names{"R", "G", "B", "-"}));
    EXPECT_EQ(rgba({"Y", "half.R", "half.G"}), (Names{"Y", "Y", "Y", "-"}));

    // Several layers: an error listing them, until input.layer picks one.
    const Names aovs = {"beauty.R", "beauty.G", "beauty.B", "beauty.A", "diffuse.R", "diffuse.G", "diffuse.B", "A"};
    const std::string msg = expect_error<InputError>([&] { roles(aovs); });
    EXPECT_EQ(msg,
              "no R,G,B or Y channels to make an image of among 8 channels (beauty.R, beauty.G, beauty.B, beauty.A, "
              "diffuse.R, diffuse.G, diffuse.B, A); several layers hold R,G,B (beauty, diffuse): set input.layer to "
              "the one the model should see");
    EXPECT_EQ(rgba(aovs, "beauty"), (Names{"beauty.R", "beauty.G", "beauty.B", "beauty.A"})) << "the layer's own alpha";
    EXPECT_EQ(rgba(aovs, "diffuse"), (Names{"diffuse.R", "diffuse.G", "diffuse.B", "A"})) << "else the bare one";
    // input.layer over bare R,G,B, and a nested layer name.
    EXPECT_EQ(rgba({"R", "G", "B", "beauty.R", "beauty.G", "beauty.B"}, "beauty"),
              (Names{"beauty.R", "beauty.G", "beauty.B", "-"}));
    EXPECT_EQ(rgba(blender, "ViewLayer.Combined")[0], "ViewLayer.Combined.R");
}

TEST(PlateChannels, AnInputLayerTheFileLacksIsAConfigErrorListingItsLayers) {
    const Names aovs = {"beauty.R", "beauty.G", "beauty.B", "diffuse.R", "diffuse.G", "diffuse.B"};
    std::string msg = expect_error<ConfigError>([&] { roles(aovs, "specular"); });
    EXPECT_EQ(msg, "input.layer 'specular': no layer of that name holds R,G,B (layers: beauty, diffuse)");
    msg = expect_error<ConfigError>([&] { roles({"R", "G", "B"}, "beauty"); });
    EXPECT_EQ(msg, "input.layer 'beauty': no layer of that name holds R,G,B (the file has no such layer)");
    msg = expect_error<ConfigError>([&] { roles({"R", "G", "B", "half.R", "half.G"}, "half"); });
    EXPECT_TRUE(contains(msg, "input.layer 'half': no layer of that name holds R,G,B")) << msg;
    msg = expect_error<ConfigError>([&] { roles(aovs, "beauty.R"); });
    EXPECT_TRUE(contains(msg, "(layers: beauty, diffuse)")) << msg;
}

TEST(PlateChannels, NumericLayerNamesAreNames) {
    const Names numbered = {"1.R", "1.G", "1.B", "2.R", "2.G", "2.B", "2.A"};
    EXPECT_EQ(rgba(numbered, "2"), (Names{"2.R", "2.G", "2.B", "2.A"}));
    EXPECT_EQ(rgba(numbered, "1"), (Names{"1.R", "1.G", "1.B", "-"}));
    EXPECT_TRUE(contains(expect_error<InputError>([&] { roles(numbered); }), "several layers hold R,G,B (1, 2)"));
    EXPECT_EQ(expect_error<ConfigError>([&] { roles(numbered, "0"); }),
              "input.layer '0': no layer of that name holds R,G,B (layers: 1, 2)")
        << "a layer is never an index";
}

// ---- views of a single-part multi-view file ----------------------------------------------------------------

TEST(PlateChannels, MultiViewDefaultViewTakesTheChannelsWithoutAViewComponent) {
    const Decided d = decide({stereo()});
    EXPECT_EQ(d.part, 0);
    EXPECT_EQ(d.view.views, (Names{"right", "left"}));
    EXPECT_EQ(d.view.view, "right");
    EXPECT_EQ(rgba(stereo(), d.roles), (Names{"R", "G", "B", "A"}));
    EXPECT_EQ(d.roles.own_depth, indices(kStereo, {"Z", "depth.Z"}));
    EXPECT_EQ(d.roles.other_depth, indices(kStereo, {"left.Z", "depth.left.Z"}));
}

TEST(PlateChannels, MultiViewInputViewTakesThatViewsChannelsAndSwapsOwnAndOtherDepth) {
    const Decided d = decide({stereo()}, input("0", "left"));
    EXPECT_EQ(d.view.view, "left");
    EXPECT_EQ(rgba(stereo(), d.roles), (Names{"left.R", "left.G", "left.B", "left.A"}));
    EXPECT_EQ(d.roles.own_depth, indices(kStereo, {"left.Z", "depth.left.Z"}));
    EXPECT_EQ(d.roles.other_depth, indices(kStereo, {"Z", "depth.Z"}));

    // A view the file lacks: its views are listed.
    EXPECT_EQ(expect_error<ConfigError>([&] { decide({stereo()}, input("0", "middle")); }),
              "input.view 'middle': the file's views are right, left");
}

TEST(PlateChannels, MultiViewChannelsNamedForTheDefaultViewAndAlphaPerView) {
    // The default view's channels may carry its name; a view without alpha has none (OIIO's alpha channel,
    // another view's A, does not count in a multi-view file).
    OIIO::ImageSpec spec =
        part({"right.R", "right.G", "right.B", "left.R", "left.G", "left.B", "left.A"}, "", "", {"right", "left"});
    spec.alpha_channel = 6;
    EXPECT_EQ(rgba(spec, decide({spec}).roles), (Names{"right.R", "right.G", "right.B", "-"}));
    EXPECT_EQ(rgba(spec, decide({spec}, input("0", "left")).roles), (Names{"left.R", "left.G", "left.B", "left.A"}));
    // Layers inside a view: the view's one layer, by its name without the view component.
    const OIIO::ImageSpec layered = part({"beauty.R", "beauty.G", "beauty.B", "beauty.left.R", "beauty.left.G",
                                          "beauty.left.B", "diffuse.left.R", "diffuse.left.G", "diffuse.left.B"},
                                         "", "", {"right", "left"});
    EXPECT_EQ(rgba(layered, decide({layered}).roles), (Names{"beauty.R", "beauty.G", "beauty.B", "-"}));
    EXPECT_TRUE(contains(expect_error<InputError>([&] { decide({layered}, input("0", "left")); }),
                         "several layers hold R,G,B (beauty, diffuse)"));
    EXPECT_EQ(rgba(layered, decide({layered}, input("0", "left", "diffuse")).roles),
              (Names{"diffuse.left.R", "diffuse.left.G", "diffuse.left.B", "-"}));
    EXPECT_EQ(expect_error<ConfigError>([&] { decide({layered}, input("0", "", "diffuse")); }),
              "input.layer 'diffuse': no layer of that name holds R,G,B (layers: beauty)")
        << "the right view has none";
}

// ---- parts -------------------------------------------------------------------------------------------------

/// A stereo multi-part file: the right eye first, a depth-only part of the left view before its colour.
std::vector<OIIO::ImageSpec> multipart() {
    return {part({"R", "G", "B", "A"}, "rgba_right", "right"), part({"Z"}, "depth_left", "left"),
            part({"R", "G", "B", "A"}, "rgba_left", "left"), part({"Y"}, "grey")};
}
const char* const kParts =
    "0 'rgba_right' (view right), 1 'depth_left' (view left), 2 'rgba_left' (view left), 3 'grey'";

TEST(PlateChannels, PartsByIndexNameAndView) {
    EXPECT_EQ(list_parts(multipart()), kParts);
    EXPECT_EQ(decide(multipart()).part, 0);
    EXPECT_EQ(decide(multipart()).view.view, "right") << "a part's view attribute is its view";
    EXPECT_EQ(decide(multipart(), input("")).part, 0) << "an empty input.part is the default";
    EXPECT_EQ(decide(multipart(), input("3")).part, 3);
    EXPECT_EQ(decide(multipart(), input("3")).view.view, "");
    EXPECT_EQ(decide(multipart(), input("rgba_left")).part, 2);
    // input.view with the default part: the first part of that view that holds colour (not the depth part).
    const Decided left = decide(multipart(), input("0", "left"));
    EXPECT_EQ(left.part, 2);
    EXPECT_EQ(left.view.view, "left");
    EXPECT_TRUE(left.view.views.empty()) << "multiView lists only a single part's views";
    EXPECT_EQ(decide(multipart(), input("0", "right")).part, 0);
    // input.part given and input.view: the part must be of that view.
    EXPECT_EQ(decide(multipart(), input("2", "left")).part, 2);
    EXPECT_EQ(expect_error<ConfigError>([&] { decide(multipart(), input("2", "right")); }),
              std::string("input.view 'right': part 2 is view 'left' (parts: ") + kParts + ")");
    EXPECT_EQ(expect_error<ConfigError>([&] { decide(multipart(), input("3", "left")); }),
              std::string("input.view 'left': the file has no views (parts: ") + kParts + ")");
    // The depth-only part itself has nothing to make an image of.
    EXPECT_TRUE(contains(expect_error<InputError>([&] { decide(multipart(), input("depth_left")); }),
                         "no R,G,B or Y channels"));
}

TEST(PlateChannels, PartsTheFileLacksAreConfigErrorsListingItsParts) {
    EXPECT_EQ(expect_error<ConfigError>([&] { decide(multipart(), input("12")); }),
              std::string("input.part 12: the file has 4 parts (") + kParts + ")");
    EXPECT_EQ(expect_error<ConfigError>([&] {
                  decide({part({"R", "G", "B"})}, input("1"));
              }),
              "input.part 1: the file has 1 part (0)");
    EXPECT_EQ(expect_error<ConfigError>([&] { decide(multipart(), input("rgba_middle")); }),
              std::string("input.part 'rgba_middle': no part of that name (parts: ") + kParts + ")");
    EXPECT_EQ(expect_error<ConfigError>([&] { decide(multipart(), input("-1")); }),
              std::string("input.part '-1': no part of that name (parts: ") + kParts + ")");
    EXPECT_EQ(
        expect_error<ConfigError>([&] { decide(multipart(), input("0", "middle")); }),
        std::string("input.view 'middle': no part of that view holds R,G,B or Y channels (parts: ") + kParts + ")");
    // One part without views.
    EXPECT_EQ(expect_error<ConfigError>([&] {
                  decide({part({"R", "G", "B"})}, input("0", "left"));
              }),
              "input.view 'left': the file has no views");
}

TEST(PlateChannels, ANumericPartIsAnIndexEvenWhenAPartIsNamedSo) {
    const std::vector<OIIO::ImageSpec> specs = {part({"R", "G", "B"}, "1"), part({"Y"}, "0"), part({"Y"}, "beauty2")};
    EXPECT_EQ(decide(specs, input("1")).part, 1) << "index 1, not the part named '1'";
    EXPECT_EQ(decide(specs, input("0")).part, 0);
    EXPECT_EQ(decide(specs, input("beauty2")).part, 2);
    // OIIO's oiio:subimagename names a part before its name attribute.
    OIIO::ImageSpec named = part({"R", "G", "B"}, "plain");
    named.attribute("oiio:subimagename", "sub");
    EXPECT_EQ(part_name_of(named), "sub");
    EXPECT_EQ(part_name_of(part({"R", "G", "B"}, "plain")), "plain");
    EXPECT_EQ(part_name_of(part({"R", "G", "B"})), "");
}
