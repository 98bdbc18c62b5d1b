//! The prelude's index arithmetic (`hloc_floordiv`, `hloc_ceildiv`, `hloc_mod`, branch-free
//! so that loops indexing with them vectorize) against floor semantics computed here in
//! Rust, over dividends and divisors of both signs, zero remainders and large magnitudes.
//! A C harness compiled with the system compiler (`$HLOC_CC`, else `cc`) prints the
//! results; without a compiler the test prints why and passes.

use std::process::Command;

const HARNESS: &str = r#"
#include <stdio.h>
int main(int argc, char **argv) {
  int64_t a, b;
  while (scanf("%lld %lld", (long long *)&a, (long long *)&b) == 2)
    printf("%lld %lld %lld\n", (long long)hloc_floordiv(a, b), (long long)hloc_ceildiv(a, b),
           (long long)hloc_mod(a, b));
  return 0;
}
"#;

/// Floor division by the textbook rule (the quotient truncates toward zero; step down when
/// a remainder is left and the signs differ).
fn floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

#[test]
fn floor_division_and_modulo_follow_floor_semantics() {
    let cc = std::env::var("HLOC_CC")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "cc".to_string());
    if !Command::new(&cc)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        println!("skipped: no C compiler `{cc}`");
        return;
    }
    let dir = std::env::temp_dir().join(format!("hloc-index-arith-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    let (src, exe) = (dir.join("h.c"), dir.join("h"));
    std::fs::write(&src, format!("{}{HARNESS}", backend_cpu::c::BASE_PRELUDE)).expect("write");
    let out = Command::new(&cc)
        .args(["-O2", "-std=gnu11", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-lm")
        .output()
        .expect("run the C compiler");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let big = 1i64 << 61;
    let mut pairs = Vec::new();
    for a in (-40..=40).chain([big, -big, big + 7, -big - 7]) {
        for b in (-9..=9).filter(|&b| b != 0).chain([1 << 20, -(1 << 20)]) {
            pairs.push((a, b));
        }
    }
    let input: String = pairs.iter().map(|(a, b)| format!("{a} {b}\n")).collect();
    let mut child = Command::new(&exe)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run the harness");
    use std::io::Write as _;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write input");
    let out = child.wait_with_output().expect("harness output");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), pairs.len(), "one line per pair");
    for ((a, b), line) in pairs.iter().zip(lines) {
        let got: Vec<i64> = line
            .split_whitespace()
            .map(|x| x.parse().expect("integer"))
            .collect();
        let q = floor_div(*a, *b);
        let want = vec![q, -floor_div(-a, *b), a - b * q];
        assert_eq!(got, want, "floordiv, ceildiv, mod of ({a}, {b})");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
