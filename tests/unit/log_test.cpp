// log.h: messages never print raw control characters (issue 13), but keep their line breaks.
#include "depthbatch/log.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace depthbatch;

TEST(Log, PrintableEscapesControlCharactersOnly) {
    EXPECT_EQ(printable("D:\temp\new.####.exr"), "D:\\temp\\new.####.exr");
    EXPECT_EQ(printable(std::string("a\x01"
                                    "b\x7f"
                                    "c\r",
                                    6)),
              "a\\x01b\\x7fc\\r");
    EXPECT_EQ(printable("plain/path é.exr"), "plain/path é.exr") << "UTF-8 stays as it is";
}

TEST(Log, LinesKeepTheirBreaksAndEscapeTheRest) {
    std::ostringstream out;
    set_log_stream(&out);
    log_error("3 frames are missing:\n  a\tb.exr\n  c.exr");
    set_log_stream(nullptr);
    EXPECT_EQ(out.str(), "depthbatch: error: 3 frames are missing:\n  a\\tb.exr\n  c.exr\n");
}
