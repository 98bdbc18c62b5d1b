//! How many bytes evaluation may allocate from one size it reads (an instruction's result,
//! a random argument, an `.npz` member): the default follows the machine's available
//! memory, and sizes like `8G` are parsed here for the `--max-memory` flag and the
//! [`MAX_MEMORY_ENV`] variable of `hloc run`.

use std::sync::OnceLock;

/// The limit used where the available memory cannot be read (no `/proc/meminfo`, as on
/// macOS or Windows, or no `MemAvailable` line in it): 4 GiB.
pub const FALLBACK_SIZE_LIMIT: u64 = 4 << 30;

/// The environment variable `hloc run` reads the limit from when `--max-memory` is not
/// given (same syntax as [`parse_size`]).
pub const MAX_MEMORY_ENV: &str = "HLOC_MAX_MEMORY";

/// The default limit in bytes: half of the machine's available memory (`MemAvailable` of
/// `/proc/meminfo`) when first asked in this process, or [`FALLBACK_SIZE_LIMIT`] where
/// that cannot be read.
///
/// Half, because an instruction's result is allocated while its operands are still alive
/// and the numeric routines work on widened copies of them: a result as large as all the
/// available memory could not be computed anyway.
pub fn default_size_limit() -> u64 {
    default_limit().0
}

/// Where [`default_size_limit`] came from, in words for messages: `"half of the available
/// memory"`, or the fallback's reason.
pub fn default_size_limit_source() -> &'static str {
    default_limit().1
}

/// The default limit and its source, read once per process.
fn default_limit() -> (u64, &'static str) {
    static LIMIT: OnceLock<(u64, &'static str)> = OnceLock::new();
    *LIMIT.get_or_init(|| limit_from_available(available_memory()))
}

/// The default limit for `available` bytes of available memory (`None`: unknown).
fn limit_from_available(available: Option<u64>) -> (u64, &'static str) {
    match available {
        Some(bytes) => ((bytes / 2).max(1), "half of the available memory"),
        None => (
            FALLBACK_SIZE_LIMIT,
            "the fallback, as the available memory is unknown",
        ),
    }
}

/// The memory available to new processes without swapping, in bytes (`MemAvailable` of
/// `/proc/meminfo`); `None` where that cannot be read.
pub fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    mem_available(&text)
}

/// The `MemAvailable` value of a `/proc/meminfo` text (`MemAvailable:  123456 kB`), in
/// bytes; `None` when the line is missing or malformed.
pub fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?;
    let mut words = line.split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    let unit = match words.next() {
        None => 1,
        Some(u) if u.eq_ignore_ascii_case("kb") => 1024,
        Some(_) => return None,
    };
    value.checked_mul(unit)
}

/// Why a size could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "bad size `{text}`: expected a number of bytes, optionally with a K, M, G or T suffix \
     (powers of 1024), e.g. 8G{}",
    detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default()
)]
pub struct SizeError {
    /// The text as given.
    pub text: String,
    /// What exactly is wrong, when more than the form.
    pub detail: Option<String>,
}

/// Parses a size: a whole number of bytes with an optional binary suffix `K`, `M`, `G`
/// or `T` (also `KB`/`KiB` and lower case; powers of 1024), e.g. `8G`, `512M`,
/// `1073741824`. Zero and sizes beyond `u64` are errors.
///
/// ```
/// use hlo_eval::memory::parse_size;
/// assert_eq!(parse_size("8G"), Ok(8 << 30));
/// assert_eq!(parse_size("1536k"), Ok(1536 << 10));
/// assert_eq!(parse_size("100"), Ok(100));
/// assert!(parse_size("8X").is_err());
/// ```
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let err = |detail: Option<&str>| SizeError {
        text: text.to_string(),
        detail: detail.map(str::to_string),
    };
    let t = text.trim();
    let digits_end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(digits_end);
    if digits.is_empty() {
        return Err(err(None));
    }
    let shift = match suffix.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(err(None)),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| err(Some("larger than 2^64 bytes")))?;
    if n == 0 {
        return Err(err(Some("the limit must be at least one byte")));
    }
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| err(Some("larger than 2^64 bytes")))
}

/// A byte count for messages: `40000000000 bytes (37.3 GiB)`, or `300 bytes` below 1 KiB.
pub fn describe_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{bytes} bytes ({})", format_size(bytes))
    }
}

/// A byte count for people: `4 GiB`, `1.5 MiB`, `300 bytes`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut unit = 0;
    let mut value = bytes as f64;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("1"), Ok(1));
        assert_eq!(parse_size("2K"), Ok(2048));
        assert_eq!(parse_size("3 MiB"), Ok(3 << 20));
        assert_eq!(parse_size("8g"), Ok(8 << 30));
        assert_eq!(parse_size("1TB"), Ok(1 << 40));
        assert_eq!(parse_size("4096b"), Ok(4096));
        for bad in [
            "",
            "G",
            "1.5G",
            "-1",
            "8Q",
            "0",
            "99999999999999999999",
            "16777216T",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_size("0").unwrap_err().to_string(),
            "bad size `0`: expected a number of bytes, optionally with a K, M, G or T suffix \
             (powers of 1024), e.g. 8G (the limit must be at least one byte)"
        );
    }

    #[test]
    fn meminfo_is_read_in_kilobytes() {
        let text = "MemTotal:       24576000 kB\nMemFree:  100 kB\nMemAvailable:   20000000 kB\n";
        assert_eq!(mem_available(text), Some(20_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
        assert_eq!(mem_available("MemAvailable: 5 MB\n"), None);
    }

    #[test]
    fn default_limit_is_half_the_available_memory() {
        assert_eq!(
            limit_from_available(Some(20 << 30)),
            (10 << 30, "half of the available memory")
        );
        assert_eq!(limit_from_available(Some(1)).0, 1);
        assert_eq!(limit_from_available(None).0, FALLBACK_SIZE_LIMIT);
        assert!(default_size_limit() > 0);
        // Linux always has the line (since 3.14); elsewhere the fallback is taken.
        if cfg!(target_os = "linux") {
            assert_eq!(default_size_limit_source(), "half of the available memory");
        }
    }

    #[test]
    fn sizes_format_for_people() {
        assert_eq!(format_size(300), "300 bytes");
        assert_eq!(format_size(4 << 30), "4 GiB");
        assert_eq!(format_size(3 << 19), "1.5 MiB");
        assert_eq!(describe_bytes(24), "24 bytes");
        assert_eq!(describe_bytes(4 << 30), "4294967296 bytes (4 GiB)");
    }
}
