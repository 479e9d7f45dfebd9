// RecentlyUsed: the id bookkeeping of serve's image cache and open videos.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/recently_used.h"

namespace sam2rt {
namespace {

// The ids from the least recently used to the most, as drop_oldest visits them.
std::vector<std::string> oldest_first(RecentlyUsed<int>& values) {
  std::vector<std::string> ids;
  values.drop_oldest([] { return true; }, [&](const std::string& id, int) {
    ids.push_back(id);
    return false;
  });
  return ids;
}

TEST(RecentlyUsed, IdsAreUnusedRandomHex) {
  RecentlyUsed<int> values;
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const std::string id = values.unused_id();
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    values.insert(id, i);
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_THROW(values.insert(*seen.begin(), 0), std::logic_error);
}

TEST(RecentlyUsed, FindMarksAValueAsTheMostRecentlyUsed) {
  RecentlyUsed<int> values;
  values.insert("a", 1);
  values.insert("b", 2);
  values.insert("c", 3);
  EXPECT_EQ(oldest_first(values), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_NE(values.find("a"), nullptr);
  EXPECT_EQ(*values.find("a"), 1);
  EXPECT_EQ(values.find("z"), nullptr);
  EXPECT_EQ(oldest_first(values), (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_EQ(values.erase("c"), 3);
  EXPECT_EQ(values.erase("c"), std::nullopt);
  EXPECT_EQ(oldest_first(values), (std::vector<std::string>{"b", "a"}));
}

TEST(RecentlyUsed, DropOldestSkipsWhatItKeepsAndStopsWhenDone) {
  RecentlyUsed<int> values;
  for (const char* id : {"a", "b", "c", "d", "e"}) values.insert(id, static_cast<int>(id[0] - 'a'));
  // Drop odd values, oldest first, until three are left: "b" and "d" go, "a" stays.
  values.drop_oldest([&] { return values.size() > 3; }, [](const std::string&, int value) { return value % 2 == 1; });
  EXPECT_EQ(oldest_first(values), (std::vector<std::string>{"a", "c", "e"}));
  // Nothing droppable: the values stay however long more() holds.
  values.drop_oldest([] { return true; }, [](const std::string&, int) { return false; });
  EXPECT_EQ(values.size(), 3u);
  values.clear();
  EXPECT_EQ(values.size(), 0u);
  EXPECT_EQ(values.find("a"), nullptr);
}

}  // namespace
}  // namespace sam2rt
