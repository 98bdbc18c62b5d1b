//! The counter-based generators of XLA's `prng` library, bit for bit: ThreeFry-2x32 (20
//! rounds) and Philox-4x32 (10 rounds). Hand-written because they must match XLA exactly;
//! shared by the evaluator's `rng-bit-generator` and the compiled runtime's.

/// ThreeFry-2x32 with 20 rounds.
pub fn threefry2x32(input: [u32; 2], key: [u32; 2]) -> [u32; 2] {
    const ROT: [u32; 8] = [13, 15, 26, 6, 17, 29, 16, 24];
    let ks = [key[0], key[1], 0x1BD1_1BDA ^ key[0] ^ key[1]];
    let mut x = [input[0].wrapping_add(ks[0]), input[1].wrapping_add(ks[1])];
    for block in 0..5u32 {
        let rots = if block % 2 == 0 { &ROT[..4] } else { &ROT[4..] };
        for &r in rots {
            x[0] = x[0].wrapping_add(x[1]);
            x[1] = x[1].rotate_left(r) ^ x[0];
        }
        let i = block as usize + 1;
        x[0] = x[0].wrapping_add(ks[i % 3]);
        x[1] = x[1].wrapping_add(ks[(i + 1) % 3]).wrapping_add(block + 1);
    }
    x
}

/// Philox-4x32 with 10 rounds.
pub fn philox4x32(mut x: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    const M_A: u64 = 0xD251_1F53;
    const M_B: u64 = 0xCD9E_8D57;
    for _ in 0..10 {
        let p0 = u64::from(x[0]) * M_A;
        let p1 = u64::from(x[2]) * M_B;
        x = [
            (p1 >> 32) as u32 ^ x[1] ^ key[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ x[3] ^ key[1],
            p0 as u32,
        ];
        key = [
            key[0].wrapping_add(0x9E37_79B9),
            key[1].wrapping_add(0xBB67_AE85),
        ];
    }
    x
}

/// A 64-bit value as its (low, high) 32-bit words.
pub fn halves(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}
