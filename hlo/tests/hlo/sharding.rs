//! Shardings: the text round trip and per-device tiles of `tests/sharding/*.test`
//! (testkit's format, `UPDATE_EXPECT=1` blesses), and by enumeration over random shapes
//! and tiled shardings, that the shards of the devices cover the global array exactly once
//! per replica and that device -> tile and tile -> devices agree.

use std::path::Path;

use hlo::sharding::{parse_sharding, Sharding, SubgroupKind, TileAssignment};
use testkit::golden;

fn list(header: Option<&str>) -> Option<Vec<i64>> {
    let h = header?.trim().trim_start_matches('[').trim_end_matches(']');
    Some(h.split(',').map(|x| x.trim().parse().unwrap()).collect())
}

fn render(case: &golden::Case) -> String {
    let s = match parse_sharding(case.input.trim()) {
        Ok(s) => s,
        Err(e) => return format!("{}: {}\n", e.offset, e.message),
    };
    let printed = s.to_string();
    let again = parse_sharding(&printed).unwrap_or_else(|e| panic!("{printed}: {e:?}"));
    assert_eq!(
        again, s,
        "{}: printed text reads back differently",
        case.title
    );
    let mut out = format!("{printed}\n");
    let (Some(dims), Some(n)) = (
        list(case.header_value("shape")),
        case.header_value("devices")
            .map(|d| d.trim().parse::<i64>().unwrap()),
    ) else {
        return out;
    };
    for d in 0..n {
        match s.shard(d, &dims) {
            Ok(Some(sh)) => out.push_str(&format!(
                "device {d}: tile {:?} offsets {:?} shape {:?} valid {:?}\n",
                sh.tile, sh.offsets, sh.shape, sh.valid
            )),
            Ok(None) => out.push_str(&format!("device {d}: none\n")),
            Err(m) => {
                out.push_str(&format!("error: {m}\n"));
                break;
            }
        }
    }
    out
}

#[test]
fn sharding_text_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sharding");
    for file in golden::files(&root, "test") {
        golden::check_file(&file, render);
    }
}

/// SplitMix64, so the test needs no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: i64) -> i64 {
        (self.next() % n as u64) as i64
    }
}

/// A random tiled sharding of a rank-`rank` array: tile counts 1..=3 per dimension, maybe
/// a replicated subgroup, devices as a shuffled list or a transposed iota.
fn random_sharding(rng: &mut Rng, rank: usize) -> Sharding {
    let mut dims: Vec<i64> = (0..rank).map(|_| 1 + rng.below(3)).collect();
    let mut subgroups = Vec::new();
    if rng.below(2) == 0 {
        dims.push(1 + rng.below(3));
        subgroups.push(SubgroupKind::Replicated);
    }
    let n: i64 = dims.iter().product();
    let tiles = if rng.below(2) == 0 {
        let mut devices: Vec<i64> = (0..n).collect();
        for i in (1..devices.len()).rev() {
            devices.swap(i, rng.below(i as i64 + 1) as usize);
        }
        TileAssignment::List { dims, devices }
    } else {
        // reshape = dims permuted; transpose brings them back in another order.
        let k = dims.len();
        let mut perm: Vec<i64> = (0..k as i64).collect();
        for i in (1..k).rev() {
            perm.swap(i, rng.below(i as i64 + 1) as usize);
        }
        let reshape: Vec<i64> = perm.iter().map(|&p| dims[p as usize]).collect();
        let mut inverse = vec![0i64; k];
        for (i, &p) in perm.iter().enumerate() {
            inverse[p as usize] = i as i64;
        }
        TileAssignment::Iota {
            dims,
            reshape,
            transpose: Some(inverse),
        }
    };
    Sharding::tiled(tiles, subgroups)
}

#[test]
fn shards_cover_the_array_once_per_replica() {
    let mut rng = Rng(35);
    for case in 0..400 {
        let rank = 1 + rng.below(3) as usize;
        let shape: Vec<i64> = (0..rank).map(|_| 1 + rng.below(7)).collect();
        let s = random_sharding(&mut rng, rank);
        let text = s.to_string();
        assert_eq!(
            parse_sharding(&text).as_ref(),
            Ok(&s),
            "case {case}: {text}"
        );
        let tiled = s.as_tiled(rank).unwrap().unwrap();
        let n = tiled.tiles.num_tiles();
        let replicas: i64 = tiled.tiles.dims()[rank..].iter().product();
        let elements: i64 = shape.iter().product();
        // Per replica (the subgroup coordinate), how often each element is held.
        let mut count = vec![0u32; (replicas * elements) as usize];
        for d in 0..n {
            let index = tiled.index_of(d).unwrap();
            let replica = index[rank..]
                .iter()
                .zip(&tiled.tiles.dims()[rank..])
                .fold(0, |acc, (&i, &m)| acc * m + i);
            let sh = s.shard(d, &shape).unwrap().unwrap();
            assert_eq!(sh.tile, index[..rank], "case {case}: {text} device {d}");
            assert!(
                s.devices_of_tile(&sh.tile, n).unwrap().contains(&d),
                "case {case}: {text}: device {d} not among its tile's devices"
            );
            // Every element of the valid region.
            let mut pos = vec![0i64; rank];
            if sh.valid.iter().all(|&v| v > 0) {
                loop {
                    let flat = (0..rank).fold(0, |acc, k| acc * shape[k] + sh.offsets[k] + pos[k]);
                    count[(replica * elements + flat) as usize] += 1;
                    let mut k = rank;
                    while k > 0 {
                        k -= 1;
                        pos[k] += 1;
                        if pos[k] < sh.valid[k] {
                            break;
                        }
                        pos[k] = 0;
                    }
                    if pos.iter().all(|&p| p == 0) {
                        break;
                    }
                }
            }
            for ((&size, &tiles), &n) in sh.shape.iter().zip(tiled.data_tiles()).zip(&shape) {
                assert!(size * tiles >= n && (size - 1) * tiles < n, "case {case}");
            }
        }
        assert!(
            count.iter().all(|&c| c == 1),
            "case {case}: {text} on {shape:?}: counts {count:?}"
        );
    }
}
