//! FxHash, rustc's hasher (no crate for it in the offline registry): a multiply-rotate per word.
//! SipHash, std's default, resists hash flooding at 3-4x the cost per key; the keys here are
//! function names and id pairs from a log or trace the user chose to read, and a flood would only
//! slow the pairing, not change its result. Shared by the initcall pairer and the function_graph scan.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// rustc's Fx hash, a word at a time: the keys (function names, id pairs) are not chosen by an
/// attacker who could flood one bucket, and SipHash cost more than the scan of the line.
#[derive(Default)]
pub(crate) struct Fx(u64);

impl Fx {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for Fx {
    /// The state mixed by murmur3's finaliser, so that every input bit reaches the low bits
    /// hashbrown picks a bucket with: the last product alone carries a word's upper bytes only
    /// upward, and names that differ in a middle character ("drv123_init+0x0/0x245", probes'
    /// "dev123.bus") fell into a few buckets, each lookup a run of memcmp (rustc-hash 2 rotates in
    /// its finish for the same reason).
    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h = (h ^ (h >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
        h = (h ^ (h >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut c = bytes.chunks_exact(8);
        for w in &mut c {
            let mut a = [0u8; 8];
            a.copy_from_slice(w);
            self.add(u64::from_le_bytes(a));
        }
        let r = c.remainder();
        if !r.is_empty() {
            let mut a = [0u8; 8];
            a[..r.len()].copy_from_slice(r);
            self.add(u64::from_le_bytes(a));
        }
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// A HashMap on FxHash.
pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;
