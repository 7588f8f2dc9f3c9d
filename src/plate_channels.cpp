#include "plate_channels.h"

#include "depthbatch/error.h"

#include <algorithm>
#include <charconv>
#include <sstream>

namespace depthbatch {
namespace {

std::vector<std::string> string_array(const OIIO::ImageSpec& spec, const char* name) {
    std::vector<std::string> out;
    const OIIO::ParamValue* p = spec.find_attribute(name);
    if (!p || p->type().basetype != OIIO::TypeDesc::STRING) return out;
    const OIIO::ustring* values = static_cast<const OIIO::ustring*>(p->data());
    const size_t n = p->type().basevalues() * static_cast<size_t>(p->nvalues());
    for (size_t i = 0; i < n; ++i) out.push_back(values[i].string());
    return out;
}

bool parse_index(const std::string& s, int& out) {
    if (s.empty()) return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out);
    return r.ec == std::errc() && r.ptr == s.data() + s.size() && out >= 0;
}

}  // namespace

std::vector<std::string> split_channel_name(const std::string& name) {
    std::vector<std::string> parts;
    std::string::size_type start = 0;
    while (true) {
        const auto dot = name.find('.', start);
        parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    return parts;
}

std::string join_names(const std::vector<std::string>& items, const char* sep) {
    std::string s;
    for (size_t i = 0; i < items.size(); ++i) s += (i ? sep : "") + items[i];
    return s;
}

ChannelName parse_channel(const std::string& name, const std::vector<std::string>& views) {
    if (views.empty()) return {"", name};
    std::vector<std::string> c = split_channel_name(name);
    if (c.size() >= 2 && std::find(views.begin(), views.end(), c[c.size() - 2]) != views.end()) {
        ChannelName n{c[c.size() - 2], ""};
        c.erase(c.end() - 2);
        n.base = join_names(c, ".");
        return n;
    }
    return {views.front(), name};
}

bool is_depth_name(const std::string& base) { return base == "Z" || base == "depth.Z"; }

std::string part_name_of(const OIIO::ImageSpec& spec) {
    std::string n = spec.get_string_attribute("oiio:subimagename");
    return n.empty() ? std::string(spec.get_string_attribute("name")) : n;
}

std::string list_parts(const std::vector<OIIO::ImageSpec>& specs) {
    std::ostringstream s;
    for (size_t i = 0; i < specs.size(); ++i) {
        s << (i ? ", " : "") << i;
        const std::string name = part_name_of(specs[i]);
        if (!name.empty()) s << " '" << name << "'";
        const std::string view = specs[i].get_string_attribute("view");
        if (!view.empty()) s << " (view " << view << ")";
    }
    return s.str();
}

bool has_colour(const OIIO::ImageSpec& spec) {
    int rgb = 0;
    for (const auto& n : spec.channelnames) {
        const std::string base = split_channel_name(n).back();
        if (base == "R" || base == "G" || base == "B") ++rgb;
        if (base == "Y") return true;
    }
    return rgb >= 3;
}

bool has_chroma_channels(const OIIO::ImageSpec& spec) {
    bool ry = false, by = false;
    for (const auto& n : spec.channelnames) {
        const std::string base = split_channel_name(n).back();
        ry |= base == "RY";
        by |= base == "BY";
    }
    return ry && by;
}

int choose_part(const std::vector<OIIO::ImageSpec>& specs, const InputSettings& job) {
    const int parts = static_cast<int>(specs.size());
    int part = -1;
    if (parse_index(job.part.empty() ? "0" : job.part, part)) {
        if (part >= parts)
            throw ConfigError("input.part " + job.part + ": the file has " + std::to_string(parts) +
                              (parts == 1 ? " part" : " parts") + " (" + list_parts(specs) + ")");
        if (!job.view.empty() && parts > 1 && part == 0) {
            part = -1;
            for (int s = 0; s < parts && part < 0; ++s)
                if (specs[s].get_string_attribute("view") == job.view && has_colour(specs[s])) part = s;
            if (part < 0)
                throw ConfigError("input.view '" + job.view +
                                  "': no part of that view holds R,G,B or Y channels (parts: " + list_parts(specs) +
                                  ")");
        }
    } else {
        for (int s = 0; s < parts && part < 0; ++s)
            if (part_name_of(specs[s]) == job.part) part = s;
        if (part < 0)
            throw ConfigError("input.part '" + job.part + "': no part of that name (parts: " + list_parts(specs) + ")");
    }
    return part;
}

ViewChoice choose_view(const std::vector<OIIO::ImageSpec>& specs, int part, const std::string& job_view) {
    const OIIO::ImageSpec& spec = specs.at(static_cast<size_t>(part));
    ViewChoice v;
    v.views = string_array(spec, "multiView");
    const std::string part_view = spec.get_string_attribute("view");
    if (!v.views.empty()) {
        v.view = job_view.empty() ? v.views.front() : job_view;
        if (std::find(v.views.begin(), v.views.end(), v.view) == v.views.end())
            throw ConfigError("input.view '" + job_view + "': the file's views are " + join_names(v.views));
    } else if (!job_view.empty()) {
        if (part_view != job_view)
            throw ConfigError("input.view '" + job_view + "': " +
                              (part_view.empty() ? std::string("the file has no views")
                                                 : "part " + std::to_string(part) + " is view '" + part_view + "'") +
                              (specs.size() > 1 ? " (parts: " + list_parts(specs) + ")" : ""));
        v.view = job_view;
    } else {
        v.view = part_view;
    }
    return v;
}

ChannelRoles assign_channels(const OIIO::ImageSpec& spec, const std::vector<std::string>& views,
                             const std::string& view, const std::string& layer) {
    ChannelRoles p;
    std::vector<ChannelName> names;
    for (const auto& n : spec.channelnames) names.push_back(parse_channel(n, views));
    auto in_view = [&](int c) { return views.empty() || names[c].view == view; };
    auto find = [&](std::initializer_list<const char*> wanted) {
        for (const char* w : wanted)
            for (int c = 0; c < spec.nchannels; ++c)
                if (in_view(c) && names[c].base == w) return c;
        return -1;
    };
    for (int c = 0; c < spec.nchannels; ++c)
        if (is_depth_name(names[c].base)) (in_view(c) ? p.own_depth : p.other_depth).push_back(c);

    p.a = find({"A", "a", "alpha"});
    if (p.a < 0 && views.empty() && spec.alpha_channel >= 0 && spec.alpha_channel < spec.nchannels)
        p.a = spec.alpha_channel;
    if (layer.empty()) {
        p.r = find({"R", "r", "red"});
        p.g = find({"G", "g", "green"});
        p.b = find({"B", "b", "blue"});
        if (p.r >= 0 && p.g >= 0 && p.b >= 0) return p;
    }

    // Named layers holding R,G,B (e.g. "rgba.R", "beauty.R", "ViewLayer.DiffCol.R"): input.layer picks one;
    // without it, the only one is used.
    std::vector<std::string> layers;
    for (int c = 0; c < spec.nchannels; ++c) {
        if (!in_view(c)) continue;
        const auto dot = names[c].base.rfind('.');
        if (dot == std::string::npos || names[c].base.substr(dot + 1) != "R") continue;
        const std::string name = names[c].base.substr(0, dot);
        bool g = false, b = false;
        for (int k = 0; k < spec.nchannels; ++k) {
            if (!in_view(k)) continue;
            g |= names[k].base == name + ".G";
            b |= names[k].base == name + ".B";
        }
        if (g && b) layers.push_back(name);
    }
    if (!layer.empty() && std::find(layers.begin(), layers.end(), layer) == layers.end())
        throw ConfigError(
            "input.layer '" + layer + "': no layer of that name holds R,G,B (" +
            (layers.empty() ? std::string("the file has no such layer") : "layers: " + join_names(layers)) + ")");
    if (!layer.empty() || layers.size() == 1) {
        const std::string L = layer.empty() ? layers.front() : layer;
        const int bare_a = p.a;
        p.a = -1;
        p.r = find({(L + ".R").c_str()});
        p.g = find({(L + ".G").c_str()});
        p.b = find({(L + ".B").c_str()});
        p.a = find({(L + ".A").c_str()});
        if (p.a < 0) p.a = bare_a;
        return p;
    }

    const int y = find({"Y", "y", "L", "gray", "grey"});
    if (y >= 0) {
        p.r = p.g = p.b = y;
        return p;
    }
    // Whatever else is left: the view's channels that are neither alpha nor depth.
    std::vector<int> colour;
    for (int c = 0; c < spec.nchannels; ++c)
        if (in_view(c) && c != p.a && !is_depth_name(names[c].base)) colour.push_back(c);
    if (colour.size() == 1 || (colour.size() == 2 && layers.empty())) {
        // grey (+ alpha): WideFloatRange.exr's lone G; of two unnamed channels the first is taken as grey
        p.r = p.g = p.b = colour[0];
    } else if (colour.size() == 3 && layers.empty()) {
        p.r = colour[0], p.g = colour[1], p.b = colour[2];  // three unnamed colour channels
    } else {
        throw InputError("no R,G,B or Y channels to make an image of among " + std::to_string(spec.nchannels) +
                         " channels (" + join_names(spec.channelnames) + ")" +
                         (layers.size() > 1 ? "; several layers hold R,G,B (" + join_names(layers) +
                                                  "): set input.layer "
                                                  "to the one the model should see"
                                            : ""));
    }
    return p;
}

}  // namespace depthbatch
