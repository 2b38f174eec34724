// HISA lookup, shared by hisa.cu and join.cu (inlined by the loader).
__device__ __forceinline__ u32 hisa_hash(const u32* key, u32 kc) {
  u32 h = 0x9747b28cu;
  for (u32 k = 0; k < kc; k++) h = hash_mix(h, key[k]);
  return hash_final(h ^ kc);
}

template <int A>
__device__ __forceinline__ void hisa_find(const u32* __restrict__ rows, const u32* __restrict__ starts,
                                          const u32* __restrict__ table, u32 mask, u32 kc, const u32* key,
                                          u32& begin, u32& end) {
  u32 h = hisa_hash(key, kc) & mask;
  begin = 0;
  end = 0;
  while (true) {
    u32 j = table[h];
    if (j == EMPTY_SLOT) return;
    u32 s = starts[j];
    const u32* r = rows + (u64)s * A;
    bool eq = true;
    for (u32 k = 0; k < kc; k++) eq = eq && (r[k] == key[k]);
    if (eq) {
      begin = s;
      end = starts[j + 1];
      return;
    }
    h = (h + 1) & mask;
  }
}
