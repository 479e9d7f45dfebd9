// The element type of every storage buffer: float, or float16_t in the variant
// compiled with -DSTORAGE_F16 (the backend's --precision fp16: half the memory
// and bandwidth). The arithmetic is fp32 in both: each value read is widened with
// float(...) and each result narrowed once, when stored, with ELEMENT(...). The
// fp16 variant needs only the device's storageBuffer16BitAccess.
#ifdef STORAGE_F16
#extension GL_EXT_shader_16bit_storage : require
#define ELEMENT float16_t
#else
#define ELEMENT float
#endif
