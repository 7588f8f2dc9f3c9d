#include "depthbatch/farm_quoting.h"

#include "depthbatch/error.h"

#include <cstdio>

namespace depthbatch {
namespace {

std::string hex4(unsigned code) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04X", code);
    return buf;
}

void require_utf8(const std::string& text, const char* engine, const char* format) {
    if (!is_valid_utf8(text))
        throw ConfigError("'" + text + "' is not UTF-8, which " + engine + "'s " + format +
                          " cannot carry: rename it (e.g. convmv -f latin1 -t utf8)");
}

}  // namespace

std::string shell_quote(const std::string& text) {
    std::string out = "'";
    for (char ch : text) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return out + "'";
}

std::string farm_safe_name(const std::string& text) {
    if (text.empty()) return "job";
    std::string out = text;
    for (char& ch : out) {
        const unsigned char c = static_cast<unsigned char>(ch);
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                        c == '_' || c == '-';
        if (!ok) ch = '_';
    }
    return out;
}

bool is_valid_utf8(const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        int n;
        unsigned cp;
        if (c < 0x80) {
            ++i;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
        } else return false;
        if (i + n >= s.size()) return false;
        for (int k = 1; k <= n; ++k) {
            const unsigned char t = static_cast<unsigned char>(s[i + k]);
            if ((t & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (t & 0x3F);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

std::string yaml_quote(const std::string& text, const char* engine) {
    require_utf8(text, engine, "YAML");
    std::string out = "\"";
    for (size_t i = 0; i < text.size(); ++i) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c < 0x20 || c == 0x7F) out += hex4(c);
        else if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x85) {
            out += hex4(0x85);
            ++i;
        } else if (c == 0xE2 && i + 2 < text.size() && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                   (static_cast<unsigned char>(text[i + 2]) == 0xA8 ||
                    static_cast<unsigned char>(text[i + 2]) == 0xA9)) {
            out += hex4(static_cast<unsigned char>(text[i + 2]) == 0xA8 ? 0x2028 : 0x2029);
            i += 2;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string python_quote(const std::string& text, const char* engine) {
    require_utf8(text, engine, "Python script");
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"') out += "\\\"";
        else if (c == '\\') out += "\\\\";
        else if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string tcl_list_element(const std::string& text) {
    if (text.find_first_of("{}\\") == std::string::npos) return "{" + text + "}";
    std::string out;
    for (unsigned char c : text) {
        if (c == '\n') out += "\\n";
        else if (c == '\r') out += "\\r";
        else if (c == '\t') out += "\\t";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04X", c);
            out += buf;
        } else if (std::string("{}[]$\"\\; #").find(static_cast<char>(c)) != std::string::npos) {
            out += '\\';
            out += static_cast<char>(c);
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

std::string windows_argv_quote(const std::string& text) {
    if (!text.empty() && text.find_first_of(" \t\n\v\"") == std::string::npos) return text;
    std::string out = "\"";
    size_t backslashes = 0;
    for (char ch : text) {
        if (ch == '\\') {
            ++backslashes;
            continue;
        }
        if (ch == '"') out.append(backslashes * 2 + 1, '\\');
        else out.append(backslashes, '\\');
        backslashes = 0;
        out += ch;
    }
    out.append(backslashes * 2, '\\');
    return out + "\"";
}

}  // namespace depthbatch
