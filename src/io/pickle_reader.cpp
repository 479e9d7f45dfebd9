#include "io/pickle_reader.h"

#include <cstring>

#include "core/error.h"
#include "io/printable_text.h"

namespace sam2rt {

size_t storage_element_size(StorageDtype dtype) { return dtype == StorageDtype::kFloat32 ? 4 : 2; }

const char* storage_dtype_name(StorageDtype dtype) {
  switch (dtype) {
    case StorageDtype::kFloat32: return "FloatStorage";
    case StorageDtype::kFloat16: return "HalfStorage";
    case StorageDtype::kBFloat16: return "BFloat16Storage";
  }
  return "?";
}

namespace {

// Far beyond what torch.save writes (it batches SETITEMS by 1000), small
// enough that a hostile pickle cannot exhaust memory through the stack.
constexpr size_t kMaxStackDepth = 1u << 20;
// A SAM 2.1 Large state dict needs about 20 000; the cap bounds the memory a
// hostile pickle can make us allocate.
constexpr size_t kMaxObjects = 1u << 21;
constexpr size_t kMaxGlobalNameLength = 256;
constexpr size_t kMaxTensorRank = 16;
constexpr size_t kNoObject = static_cast<size_t>(-1);

namespace op {
constexpr uint8_t kProto = 0x80, kFrame = 0x95, kEmptyDict = '}', kEmptyList = ']', kEmptyTuple = ')', kMark = '(',
                  kBinUnicode = 'X', kShortBinUnicode = 0x8c, kBinUnicode8 = 0x8d, kBinInt = 'J', kBinInt1 = 'K',
                  kBinInt2 = 'M', kLong1 = 0x8a, kBinFloat = 'G', kNone = 'N', kNewTrue = 0x88, kNewFalse = 0x89,
                  kTuple = 't', kTuple1 = 0x85, kTuple2 = 0x86, kTuple3 = 0x87, kList = 'l', kDict = 'd',
                  kAppend = 'a', kAppends = 'e', kSetItem = 's', kSetItems = 'u', kBinPut = 'q', kLongBinPut = 'r',
                  kBinGet = 'h', kLongBinGet = 'j', kMemoize = 0x94, kGlobal = 'c', kStackGlobal = 0x93,
                  kReduce = 'R', kBinPersId = 'Q', kBuild = 'b', kStop = '.';
}  // namespace op

std::string hex_byte(uint8_t b) {
  static const char digits[] = "0123456789abcdef";
  return std::string("0x") + digits[b >> 4] + digits[b & 15];
}

class Unpickler {
 public:
  Unpickler(std::span<const uint8_t> bytes, const std::string& origin) : in_(bytes), origin_(origin) {}

  PickleGraph run() {
    for (;;) {
      if (pos_ >= in_.size()) fail("ends without a STOP opcode (truncated)");
      const size_t op_pos = pos_;
      const uint8_t code = in_[pos_++];
      switch (code) {
        case op::kProto: {
          const uint8_t version = read_u8();
          if (version < 2 || version > 5) fail("has unsupported protocol " + std::to_string(version));
          break;
        }
        case op::kFrame: check_frame(read_le(8)); break;
        case op::kEmptyDict: push(make(PickleKind::kDict)); break;
        case op::kEmptyList: push(make(PickleKind::kList)); break;
        case op::kEmptyTuple: push(make(PickleKind::kTuple)); break;
        case op::kMark:
          if (marks_.size() >= kMaxStackDepth) fail("nests MARKs too deeply");
          marks_.push_back(stack_.size());
          break;
        case op::kBinUnicode: push_string(read_le(4)); break;
        case op::kShortBinUnicode: push_string(read_u8()); break;
        case op::kBinUnicode8: push_string(read_le(8)); break;
        case op::kBinInt: push_int(static_cast<int32_t>(static_cast<uint32_t>(read_le(4)))); break;
        case op::kBinInt1: push_int(read_u8()); break;
        case op::kBinInt2: push_int(static_cast<int64_t>(read_le(2))); break;
        case op::kLong1: push_long1(); break;
        case op::kBinFloat: push_float(); break;
        case op::kNone: push(make(PickleKind::kNone)); break;
        case op::kNewTrue: push_bool(true); break;
        case op::kNewFalse: push_bool(false); break;
        case op::kTuple: push_sequence(PickleKind::kTuple, pop_mark()); break;
        case op::kTuple1: push_sequence(PickleKind::kTuple, pop_n(1)); break;
        case op::kTuple2: push_sequence(PickleKind::kTuple, pop_n(2)); break;
        case op::kTuple3: push_sequence(PickleKind::kTuple, pop_n(3)); break;
        case op::kList: push_sequence(PickleKind::kList, pop_mark()); break;
        case op::kDict: {
          auto items = pop_mark();
          if (items.size() % 2 != 0) fail("builds a dict from an odd number of items");
          push_sequence(PickleKind::kDict, std::move(items));
          break;
        }
        case op::kAppend: extend(PickleKind::kList, "APPEND", pop_n(1)); break;
        case op::kAppends: extend(PickleKind::kList, "APPENDS", pop_mark()); break;
        case op::kSetItem: extend(PickleKind::kDict, "SETITEM", pop_n(2)); break;
        case op::kSetItems: {
          auto items = pop_mark();
          if (items.size() % 2 != 0) fail("SETITEMS has an odd number of items");
          extend(PickleKind::kDict, "SETITEMS", std::move(items));
          break;
        }
        case op::kBinPut: memo_put(read_u8()); break;
        case op::kLongBinPut: memo_put(read_le(4)); break;
        case op::kMemoize: memo_put(memo_count_); break;
        case op::kBinGet: memo_get(read_u8()); break;
        case op::kLongBinGet: memo_get(read_le(4)); break;
        case op::kGlobal: {
          std::string module = read_line();
          std::string name = read_line();
          push_global(module, name);
          break;
        }
        case op::kStackGlobal: {
          const PickleRef name = pop();
          const PickleRef module = pop();
          if (kind(module) != PickleKind::kString || kind(name) != PickleKind::kString) {
            fail("STACK_GLOBAL needs two strings");
          }
          push_global(graph_.objects[module].text, graph_.objects[name].text);
          break;
        }
        case op::kReduce: {
          const PickleRef args = pop();
          const PickleRef callable = pop();
          push(reduce(callable, args));
          break;
        }
        case op::kBinPersId: push(persistent_storage(pop())); break;
        case op::kBuild: {
          pop();  // the state: attributes such as a state dict's _metadata, not needed
          if (kind(top()) != PickleKind::kDict) fail("BUILD may only set the state of an OrderedDict");
          break;
        }
        case op::kStop:
          graph_.root = pop();
          return std::move(graph_);
        default:
          fail("opcode " + hex_byte(code) + " at byte " + std::to_string(op_pos) +
               " is not supported (a torch.save state dict never needs it)");
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& problem) const { throw Error(origin_ + ": pickle " + problem); }

  uint8_t read_u8() {
    if (pos_ >= in_.size()) fail("is truncated");
    return in_[pos_++];
  }
  uint64_t read_le(size_t count) {
    if (in_.size() - pos_ < count) fail("is truncated");
    uint64_t value = 0;
    for (size_t i = 0; i < count; ++i) value |= static_cast<uint64_t>(in_[pos_ + i]) << (8 * i);
    pos_ += count;
    return value;
  }
  // A frame only announces how many of the following bytes belong together.
  void check_frame(uint64_t length) {
    if (in_.size() - pos_ < length) fail("frame runs past the end of the pickle (truncated)");
  }
  std::string read_bytes(uint64_t count) {
    if (in_.size() - pos_ < count) {
      fail("string of " + std::to_string(count) + " bytes runs past the end of the pickle (truncated)");
    }
    std::string text(reinterpret_cast<const char*>(in_.data() + pos_), static_cast<size_t>(count));
    pos_ += static_cast<size_t>(count);
    return text;
  }
  std::string read_line() {
    const size_t limit = std::min(in_.size(), pos_ + kMaxGlobalNameLength + 1);
    for (size_t end = pos_; end < limit; ++end) {
      if (in_[end] == '\n') {
        std::string line(reinterpret_cast<const char*>(in_.data() + pos_), end - pos_);
        pos_ = end + 1;
        return line;
      }
    }
    fail("GLOBAL name is unterminated or too long");
  }

  PickleKind kind(PickleRef ref) const { return graph_.objects[ref].kind; }

  PickleRef make(PickleKind kind) {
    if (graph_.objects.size() >= kMaxObjects) fail("builds more than " + std::to_string(kMaxObjects) + " objects");
    graph_.objects.emplace_back();
    graph_.objects.back().kind = kind;
    return graph_.objects.size() - 1;
  }
  void push(PickleRef ref) {
    if (stack_.size() >= kMaxStackDepth) fail("stack grows beyond " + std::to_string(kMaxStackDepth) + " items");
    stack_.push_back(ref);
  }
  // The items above the innermost MARK belong to it; nothing may pop them.
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  PickleRef top() const {
    if (stack_.size() <= floor()) fail("stack underflow (malformed pickle)");
    return stack_.back();
  }
  PickleRef pop() {
    const PickleRef ref = top();
    stack_.pop_back();
    return ref;
  }
  std::vector<PickleRef> pop_n(size_t count) {
    if (stack_.size() - floor() < count) fail("stack underflow (malformed pickle)");
    std::vector<PickleRef> items(stack_.end() - static_cast<ptrdiff_t>(count), stack_.end());
    stack_.resize(stack_.size() - count);
    return items;
  }
  std::vector<PickleRef> pop_mark() {
    if (marks_.empty()) fail("uses a MARK that was never set (malformed pickle)");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<PickleRef> items(stack_.begin() + static_cast<ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }

  void push_string(uint64_t length) {
    const PickleRef ref = make(PickleKind::kString);
    graph_.objects[ref].text = read_bytes(length);
    push(ref);
  }
  void push_int(int64_t value) {
    const PickleRef ref = make(PickleKind::kInt);
    graph_.objects[ref].integer = value;
    push(ref);
  }
  void push_bool(bool value) {
    const PickleRef ref = make(PickleKind::kBool);
    graph_.objects[ref].integer = value ? 1 : 0;
    push(ref);
  }
  void push_long1() {
    const uint8_t count = read_u8();
    if (count > 8) fail("integer of " + std::to_string(count) + " bytes is too large");
    uint64_t value = read_le(count);
    if (count > 0 && count < 8 && (value >> (8 * count - 1)) & 1) value |= ~uint64_t{0} << (8 * count);
    push_int(static_cast<int64_t>(value));
  }
  void push_float() {
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | read_u8();  // big-endian
    const PickleRef ref = make(PickleKind::kFloat);
    std::memcpy(&graph_.objects[ref].real, &bits, sizeof bits);
    push(ref);
  }
  void push_sequence(PickleKind kind, std::vector<PickleRef> items) {
    const PickleRef ref = make(kind);
    graph_.objects[ref].items = std::move(items);
    push(ref);
  }
  void extend(PickleKind expected, const char* opcode, std::vector<PickleRef> items) {
    PickleObject& target = graph_.objects[top()];
    if (target.kind != expected) {
      fail(std::string(opcode) + " applies to a " + (expected == PickleKind::kList ? "non-list" : "non-dict"));
    }
    target.items.insert(target.items.end(), items.begin(), items.end());
  }

  void memo_put(uint64_t index) {
    // Every memo write costs at least one byte, so no valid index exceeds the pickle's length.
    if (index >= in_.size()) fail("memo index " + std::to_string(index) + " is out of range");
    if (memo_.size() <= index) memo_.resize(static_cast<size_t>(index) + 1, kNoObject);
    PickleRef& slot = memo_[static_cast<size_t>(index)];
    if (slot == kNoObject) ++memo_count_;
    slot = top();
  }
  void memo_get(uint64_t index) {
    if (index >= memo_.size() || memo_[static_cast<size_t>(index)] == kNoObject) {
      fail("reads memo entry " + std::to_string(index) + " that was never written (malformed pickle)");
    }
    push(memo_[static_cast<size_t>(index)]);
  }

  void push_global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    PickleGlobal global{};
    StorageDtype dtype{};
    if (full == "collections.OrderedDict") {
      global = PickleGlobal::kOrderedDict;
    } else if (full == "torch._utils._rebuild_tensor_v2") {
      global = PickleGlobal::kRebuildTensorV2;
    } else if (full == "torch.FloatStorage") {
      global = PickleGlobal::kStorageType;
      dtype = StorageDtype::kFloat32;
    } else if (full == "torch.HalfStorage") {
      global = PickleGlobal::kStorageType;
      dtype = StorageDtype::kFloat16;
    } else if (full == "torch.BFloat16Storage") {
      global = PickleGlobal::kStorageType;
      dtype = StorageDtype::kBFloat16;
    } else {
      fail("refers to forbidden global '" + printable(full) +
           "'; only float32/float16/bfloat16 state dicts saved with torch.save are accepted");
    }
    const PickleRef ref = make(PickleKind::kGlobal);
    graph_.objects[ref].text = full;
    graph_.objects[ref].global = global;
    graph_.objects[ref].dtype = dtype;
    push(ref);
  }

  PickleRef reduce(PickleRef callable, PickleRef args) {
    const PickleObject& fn = graph_.objects[callable];
    if (fn.kind != PickleKind::kGlobal) fail("REDUCE calls something that is not an allowed global");
    if (kind(args) != PickleKind::kTuple) fail("REDUCE of '" + fn.text + "' has non-tuple arguments");
    switch (fn.global) {
      case PickleGlobal::kOrderedDict:
        if (!graph_.objects[args].items.empty()) fail("OrderedDict is built with arguments");
        return make(PickleKind::kDict);
      case PickleGlobal::kRebuildTensorV2: {
        const std::vector<PickleRef> arguments = graph_.objects[args].items;  // make() may move the objects
        return rebuild_tensor(arguments);
      }
      case PickleGlobal::kStorageType: break;
    }
    fail("calls '" + fn.text + "', which is only valid inside a persistent id");
  }

  int64_t int_arg(PickleRef ref, const char* what) const {
    if (kind(ref) != PickleKind::kInt) fail("_rebuild_tensor_v2 " + std::string(what) + " is not an integer");
    return graph_.objects[ref].integer;
  }

  std::vector<int64_t> int_tuple_arg(PickleRef ref, const char* what) const {
    if (kind(ref) != PickleKind::kTuple) fail("_rebuild_tensor_v2 " + std::string(what) + " is not a tuple");
    const auto& items = graph_.objects[ref].items;
    if (items.size() > kMaxTensorRank) fail("tensor has more than " + std::to_string(kMaxTensorRank) + " dimensions");
    std::vector<int64_t> values;
    for (PickleRef item : items) {
      const int64_t v = int_arg(item, what);
      if (v < 0) fail("_rebuild_tensor_v2 " + std::string(what) + " has a negative entry");
      values.push_back(v);
    }
    return values;
  }

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
  //                    backward_hooks[, metadata])
  PickleRef rebuild_tensor(const std::vector<PickleRef>& args) {
    if (args.size() != 6 && args.size() != 7) {
      fail("_rebuild_tensor_v2 takes 6 or 7 arguments, got " + std::to_string(args.size()));
    }
    if (kind(args[0]) != PickleKind::kStorage) fail("_rebuild_tensor_v2 is not given a storage");
    const int64_t offset = int_arg(args[1], "storage offset");
    if (offset < 0) fail("_rebuild_tensor_v2 storage offset is negative");
    Shape sizes = int_tuple_arg(args[2], "size");
    std::vector<int64_t> strides = int_tuple_arg(args[3], "stride");
    if (sizes.size() != strides.size()) fail("_rebuild_tensor_v2 size and stride have different ranks");
    if (kind(args[4]) != PickleKind::kBool) fail("_rebuild_tensor_v2 requires_grad is not a bool");
    if (kind(args[5]) != PickleKind::kDict) fail("_rebuild_tensor_v2 backward_hooks is not a dict");
    if (args.size() == 7 && kind(args[6]) != PickleKind::kDict && kind(args[6]) != PickleKind::kNone) {
      fail("_rebuild_tensor_v2 metadata is not a dict");
    }
    const PickleRef ref = make(PickleKind::kTensor);
    PickleObject& tensor = graph_.objects[ref];
    tensor.items = {args[0]};
    tensor.integer = offset;
    tensor.sizes = std::move(sizes);
    tensor.strides = std::move(strides);
    return ref;
  }

  // ('storage', storage_type, key, location, numel), as torch.save writes it.
  PickleRef persistent_storage(PickleRef pid) {
    const PickleObject& id = graph_.objects[pid];
    const bool well_formed =
        id.kind == PickleKind::kTuple && id.items.size() == 5 && kind(id.items[0]) == PickleKind::kString &&
        graph_.objects[id.items[0]].text == "storage" && kind(id.items[1]) == PickleKind::kGlobal &&
        graph_.objects[id.items[1]].global == PickleGlobal::kStorageType && kind(id.items[2]) == PickleKind::kString &&
        kind(id.items[3]) == PickleKind::kString && kind(id.items[4]) == PickleKind::kInt &&
        graph_.objects[id.items[4]].integer >= 0;
    if (!well_formed) fail("has a persistent id that is not ('storage', type, key, location, numel)");
    const StorageDtype dtype = graph_.objects[id.items[1]].dtype;
    std::string key = graph_.objects[id.items[2]].text;
    const int64_t numel = graph_.objects[id.items[4]].integer;
    const PickleRef ref = make(PickleKind::kStorage);
    graph_.objects[ref].dtype = dtype;
    graph_.objects[ref].text = std::move(key);
    graph_.objects[ref].integer = numel;
    return ref;
  }

  std::span<const uint8_t> in_;
  const std::string& origin_;
  size_t pos_ = 0;
  PickleGraph graph_;
  std::vector<PickleRef> stack_;
  std::vector<size_t> marks_;
  std::vector<PickleRef> memo_;
  uint64_t memo_count_ = 0;  // MEMOIZE stores at index len(memo), as in Python
};

}  // namespace

PickleGraph read_torch_pickle(std::span<const uint8_t> bytes, const std::string& origin) {
  return Unpickler(bytes, origin).run();
}

}  // namespace sam2rt
