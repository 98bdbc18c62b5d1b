//! Times parsing, verifying and printing of HLO files (a development aid): each file is parsed
//! `REPEAT` times (default 20) and the best time is kept.

fn main() {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    let repeat: usize = std::env::var("REPEAT")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let (mut bytes, mut parse_s, mut verify_s, mut print_s) = (0usize, 0f64, 0f64, 0f64);
    for path in &paths {
        let text = std::fs::read_to_string(path).expect("read");
        let (mut best_parse, mut best_verify, mut best_print) = (f64::MAX, f64::MAX, f64::MAX);
        for _ in 0..repeat {
            let t = std::time::Instant::now();
            let m = hlo::parse_module(&text).expect("parse");
            best_parse = best_parse.min(t.elapsed().as_secs_f64());
            let t = std::time::Instant::now();
            let ok = hlo::verifier::verify(&m).is_ok();
            best_verify = best_verify.min(t.elapsed().as_secs_f64());
            std::hint::black_box(ok);
            let t = std::time::Instant::now();
            let out = hlo::print_module(&m);
            best_print = best_print.min(t.elapsed().as_secs_f64());
            std::hint::black_box(out);
        }
        bytes += text.len();
        parse_s += best_parse;
        verify_s += best_verify;
        print_s += best_print;
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "{} files, {mb:.2} MB: parse {:.0} MB/s, verify {:.0} MB/s, parse+verify {:.0} MB/s, print {:.0} MB/s",
        paths.len(),
        mb / parse_s,
        mb / verify_s,
        mb / (parse_s + verify_s),
        mb / print_s
    );
}
