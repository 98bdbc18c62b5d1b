//! Parses an HLO file and prints it back (a development aid).

fn main() {
    let path = std::env::args().nth(1).expect("usage: hlofmt FILE");
    let text = std::fs::read_to_string(&path).expect("read");
    let opts = hlo::ParseOptions {
        file_name: Some(path.clone()),
        ..Default::default()
    };
    match hlo::parse_module_with(&text, &opts) {
        Ok(p) => {
            for w in &p.warnings {
                eprintln!("{w}");
            }
            print!("{}", hlo::print_module(&p.module));
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
