//! Reads a sharding's text (`{replicated}`, `{maximal device=1}`, `{devices=[2,2]<=[4]
//! last_tile_dim_replicate}`, `{{manual}, {devices=[2]1,0}}`, `{mesh['x'=2,'y'=2], [{'x'},
//! {}]}`, ...) into a [`Sharding`]. Every malformed or unsupported form is an error with
//! the byte offset in the text where it was found; the instruction parser turns it into
//! `file:line:column`.

use crate::sharding_types::{
    checked_product, AxisRef, NamedSharding, ShardGroup, Sharding, ShardingKind, SubgroupKind,
    TileAssignment, TiledSharding, MAX_SHARDING_DEVICES,
};

/// A sharding text that does not parse: what and where (a byte offset into the text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardingParseError {
    /// Byte offset of the problem in the sharding's text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

type R<T> = Result<T, ShardingParseError>;

/// Parses a whole sharding text (nothing may follow its closing brace).
pub fn parse_sharding(text: &str) -> Result<Sharding, ShardingParseError> {
    let mut c = Cursor { s: text, at: 0 };
    let sharding = c.sharding(0)?;
    c.ws();
    if c.at != text.len() {
        return Err(c.err("unexpected text after the sharding"));
    }
    Ok(sharding)
}

/// The most nested tuple shardings read (tuples of tuples).
const MAX_DEPTH: usize = 64;

struct Cursor<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn err(&self, message: impl Into<String>) -> ShardingParseError {
        self.err_at(self.at, message)
    }

    fn err_at(&self, offset: usize, message: impl Into<String>) -> ShardingParseError {
        ShardingParseError {
            offset,
            message: message.into(),
        }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.at..]
    }

    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.at).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Skips white space, then consumes `tok` if it comes next.
    fn eat(&mut self, tok: &str) -> bool {
        self.ws();
        if self.rest().starts_with(tok) {
            self.at += tok.len();
            true
        } else {
            false
        }
    }

    fn expect(&mut self, tok: &str, what: &str) -> R<()> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(self.err(format!("expected '{tok}' {what}")))
        }
    }

    /// A lower-case word (`replicated`, `last_tile_dims`, ...).
    fn word(&mut self) -> &'a str {
        self.ws();
        let start = self.at;
        while matches!(
            self.peek(),
            Some(b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'0'..=b'9')
        ) {
            self.at += 1;
        }
        &self.s[start..self.at]
    }

    /// A non-negative integer.
    fn int(&mut self, what: &str) -> R<i64> {
        self.ws();
        let start = self.at;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.at += 1;
        }
        if start == self.at {
            return Err(self.err(format!("expected {what} (a non-negative integer)")));
        }
        self.s[start..self.at]
            .parse()
            .map_err(|_| self.err_at(start, format!("{what} is too large")))
    }

    /// `open int (',' int)* close`, possibly empty.
    fn int_list(&mut self, open: &str, close: &str, what: &str) -> R<Vec<i64>> {
        self.expect(open, &format!("to start the {what}"))?;
        let mut v = Vec::new();
        if self.eat(close) {
            return Ok(v);
        }
        loop {
            v.push(self.int(what)?);
            if self.eat(close) {
                return Ok(v);
            }
            self.expect(",", &format!("or '{close}' in the {what}"))?;
        }
    }

    /// One sharding: `{...}`.
    fn sharding(&mut self, depth: usize) -> R<Sharding> {
        if depth > MAX_DEPTH {
            return Err(self.err("tuple shardings nest too deeply"));
        }
        self.expect("{", "to start a sharding")?;
        self.ws();
        if self.peek() == Some(b'{') {
            let mut parts = Vec::new();
            loop {
                parts.push(self.sharding(depth + 1)?);
                if self.eat("}") {
                    return Ok(Sharding::new(ShardingKind::Tuple(parts)));
                }
                self.expect(",", "or '}' between tuple element shardings")?;
            }
        }
        if self.eat("}") {
            return Ok(Sharding::new(ShardingKind::Tuple(Vec::new())));
        }
        if self.rest().starts_with("mesh[") || self.rest().starts_with("@mesh<") {
            return self.named();
        }
        self.single()
    }

    /// The attributes of a non-tuple, non-named sharding, up to its closing brace.
    fn single(&mut self) -> R<Sharding> {
        let start = self.at;
        let mut flags: Vec<(&str, usize)> = Vec::new();
        let mut device = None;
        let mut tiles = None;
        let mut last_tile_dims = None;
        let mut replicate_last = false;
        let mut metadata = None;
        let mut shard_group = None;
        loop {
            if self.eat("}") {
                break;
            }
            self.ws();
            let at = self.at;
            let w = self.word();
            match w {
                "replicated" | "manual" | "unknown" | "maximal" | "unreduced" => {
                    flags.push((w, at))
                }
                "last_tile_dim_replicate" => replicate_last = true,
                "device" => {
                    self.expect("=", "after device")?;
                    device = Some(self.int("the device id")?);
                }
                "devices" => {
                    self.expect("=", "after devices")?;
                    tiles = Some((self.tile_assignment()?, at));
                }
                "last_tile_dims" => {
                    self.expect("=", "after last_tile_dims")?;
                    last_tile_dims = Some((self.subgroup_kinds()?, at));
                }
                "metadata" => {
                    self.expect("=", "after metadata")?;
                    metadata = Some(self.balanced()?);
                }
                "shard_as" | "shard_like" => {
                    let id = self.int("the shard group id")?;
                    shard_group = Some(ShardGroup {
                        shard_as: w == "shard_as",
                        id,
                    });
                }
                "" => return Err(self.err("expected a sharding attribute or '}'")),
                other => {
                    return Err(self.err_at(at, format!("unknown sharding attribute `{other}`")))
                }
            }
        }
        if tiles.is_none() {
            if replicate_last {
                return Err(self.err_at(start, "last_tile_dim_replicate needs devices="));
            }
            if let Some((_, at)) = last_tile_dims {
                return Err(self.err_at(at, "last_tile_dims needs devices="));
            }
        }
        let kind = match (flags.as_slice(), tiles) {
            ([], Some((tiles, at))) => {
                let subgroups = match (replicate_last, last_tile_dims) {
                    (true, Some((_, at))) => {
                        return Err(self.err_at(
                            at,
                            "last_tile_dim_replicate and last_tile_dims cannot both be given",
                        ))
                    }
                    (true, None) => vec![SubgroupKind::Replicated],
                    (false, Some((kinds, _))) => kinds,
                    (false, None) => Vec::new(),
                };
                if subgroups.len() > tiles.dims().len() {
                    return Err(self.err_at(
                        at,
                        format!(
                            "{} subgroup dimensions but the tile assignment has only {}",
                            subgroups.len(),
                            tiles.dims().len()
                        ),
                    ));
                }
                ShardingKind::Tiled(TiledSharding {
                    tiles,
                    subgroups,
                    last_tile_dim_replicate: replicate_last,
                })
            }
            ([("maximal", _)], None) => match device {
                Some(d) => ShardingKind::Maximal(d),
                None => return Err(self.err_at(start, "a maximal sharding needs device=N")),
            },
            ([(w, at)], None) => {
                if device.is_some() {
                    return Err(self.err_at(*at, format!("device= is not taken by `{w}`")));
                }
                match *w {
                    "replicated" => ShardingKind::Replicated,
                    "manual" => ShardingKind::Manual,
                    "unreduced" => ShardingKind::Unreduced,
                    _ => ShardingKind::Unknown,
                }
            }
            ([], None) => {
                return Err(self.err_at(
                    start,
                    "a sharding needs one of replicated, manual, unknown, maximal or devices=",
                ))
            }
            ([(_, first), rest @ ..], _) => {
                return Err(self.err_at(
                    rest.first().map_or(*first, |r| r.1),
                    "a sharding takes only one of replicated, manual, unknown, maximal, \
                     unreduced or devices=",
                ))
            }
        };
        Ok(Sharding {
            kind,
            metadata,
            shard_group,
        })
    }

    /// After `devices=`: `[dims]` then a device list or `<=[reshape]` with `T(perm)`.
    fn tile_assignment(&mut self) -> R<TileAssignment> {
        let at = self.at;
        let dims = self.int_list("[", "]", "tile assignment dimensions")?;
        if dims.is_empty() {
            return Err(self.err_at(at, "a tile assignment needs at least one dimension"));
        }
        let tiles = checked_product(&dims)
            .filter(|&n| n <= MAX_SHARDING_DEVICES)
            .ok_or_else(|| {
                self.err_at(
                    at,
                    format!("the tile assignment has more than {MAX_SHARDING_DEVICES} tiles"),
                )
            })?;
        if self.eat("<=") {
            let rat = self.at;
            let reshape = self.int_list("[", "]", "iota reshape dimensions")?;
            if checked_product(&reshape) != Some(tiles) || reshape.is_empty() {
                let join = |v: &[i64]| v.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
                return Err(self.err_at(
                    rat,
                    format!(
                        "sharding devices=[{}] has {tiles} tiles but its iota <=[{}] has {} devices",
                        join(&dims),
                        join(&reshape),
                        match checked_product(&reshape) {
                            Some(n) if !reshape.is_empty() => n.to_string(),
                            _ => "too many".to_string(),
                        }
                    ),
                ));
            }
            let mut transpose = None;
            self.ws();
            if self.peek() == Some(b'T') {
                self.at += 1;
                let tat = self.at;
                let perm = self.int_list("(", ")", "iota transpose")?;
                let written = &self.s[tat..self.at];
                let mut sorted = perm.clone();
                sorted.sort_unstable();
                if sorted.len() != reshape.len()
                    || !sorted.iter().enumerate().all(|(k, &p)| p == k as i64)
                {
                    return Err(self.err_at(
                        tat,
                        format!(
                            "the iota transpose T{written} is not a permutation of its {} dimensions",
                            reshape.len()
                        ),
                    ));
                }
                transpose = Some(perm);
            }
            return Ok(TileAssignment::Iota {
                dims,
                reshape,
                transpose,
            });
        }
        let lat = self.at;
        let mut devices = Vec::new();
        loop {
            devices.push(self.int("a device id")?);
            // A ',' continues the list only when a device id follows it.
            let save = self.at;
            if self.eat(",") {
                self.ws();
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    continue;
                }
            }
            self.at = save;
            break;
        }
        let shown = dims
            .iter()
            .map(i64::to_string)
            .collect::<Vec<_>>()
            .join(",");
        if devices.len() as i64 != tiles {
            return Err(self.err_at(
                lat,
                format!(
                    "sharding devices=[{shown}] has {tiles} tiles but lists {} device ids",
                    devices.len()
                ),
            ));
        }
        let mut sorted = devices.clone();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(self.err_at(lat, format!("sharding lists device {} twice", w[0])));
        }
        Ok(TileAssignment::List { dims, devices })
    }

    /// `{manual, replicated, unreduced}`.
    fn subgroup_kinds(&mut self) -> R<Vec<SubgroupKind>> {
        self.expect("{", "to start last_tile_dims")?;
        let mut v = Vec::new();
        loop {
            let at = self.at;
            v.push(match self.word() {
                "replicated" => SubgroupKind::Replicated,
                "manual" => SubgroupKind::Manual,
                "unreduced" => SubgroupKind::Unreduced,
                other => {
                    return Err(self.err_at(
                        at,
                        format!("unknown subgroup kind `{other}` in last_tile_dims"),
                    ))
                }
            });
            if self.eat("}") {
                return Ok(v);
            }
            self.expect(",", "or '}' in last_tile_dims")?;
        }
    }

    /// A `{...}` value with balanced braces (strings may hold braces), returned verbatim.
    fn balanced(&mut self) -> R<String> {
        self.ws();
        let start = self.at;
        if self.peek() != Some(b'{') {
            return Err(self.err("expected '{' to start the metadata"));
        }
        let bytes = self.s.as_bytes();
        let mut depth = 0usize;
        let mut i = self.at;
        while i < bytes.len() {
            match bytes[i] {
                b'"' => {
                    i += 1;
                    while i < bytes.len() && bytes[i] != b'"' {
                        i += if bytes[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        self.at = i + 1;
                        return Ok(self.s[start..self.at].to_string());
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Err(self.err_at(start, "the metadata is not closed"))
    }

    /// `mesh['a'=2,'b'=2], [{'a'}, {}]` or `@mesh<a=2,b=2>(ids), [{a}, {}]`, then optional
    /// `replicated={...}`, `unreduced={...}`, `metadata={...}`, and the closing brace.
    fn named(&mut self) -> R<Sharding> {
        let quoted = self.eat("mesh[");
        if !quoted {
            self.expect("@mesh<", "to start a mesh")?;
        }
        let close = if quoted { "]" } else { ">" };
        let mut mesh: Vec<(String, i64)> = Vec::new();
        loop {
            let at = self.at;
            let name = self.axis_name(quoted)?;
            self.expect("=", "after a mesh axis name")?;
            let size = self.int("a mesh axis size")?;
            if size == 0 {
                return Err(self.err_at(at, format!("mesh axis `{name}` has size 0")));
            }
            if mesh.iter().any(|(n, _)| *n == name) {
                return Err(self.err_at(at, format!("mesh axis `{name}` is named twice")));
            }
            mesh.push((name, size));
            if self.eat(close) {
                break;
            }
            self.expect(",", &format!("or '{close}' in the mesh"))?;
        }
        let sizes: Vec<i64> = mesh.iter().map(|m| m.1).collect();
        let n = checked_product(&sizes)
            .filter(|&n| n <= MAX_SHARDING_DEVICES)
            .ok_or_else(|| {
                self.err(format!(
                    "the mesh has more than {MAX_SHARDING_DEVICES} devices"
                ))
            })?;
        let mut mesh_devices = None;
        if !quoted && self.eat("(") {
            let at = self.at;
            let mut ids = Vec::new();
            loop {
                self.ws();
                match self.peek() {
                    Some(b'[' | b']' | b',') => self.at += 1,
                    Some(b')') => {
                        self.at += 1;
                        break;
                    }
                    _ => ids.push(self.int("a mesh device id")?),
                }
            }
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            if sorted != (0..n).collect::<Vec<_>>() {
                return Err(self.err_at(
                    at,
                    format!("the mesh's device ids are not a permutation of 0..{n}"),
                ));
            }
            mesh_devices = Some(ids);
        }
        self.expect(",", "after the mesh")?;
        self.expect("[", "to start the dimension shardings")?;
        let mut dims = Vec::new();
        if !self.eat("]") {
            loop {
                dims.push(self.axis_refs(&mesh, quoted)?);
                if self.eat("]") {
                    break;
                }
                self.expect(",", "or ']' between dimension shardings")?;
            }
        }
        let mut named = NamedSharding {
            mesh,
            mesh_devices,
            dims,
            replicated: Vec::new(),
            unreduced: Vec::new(),
            quoted,
        };
        let mut metadata = None;
        loop {
            if self.eat("}") {
                break;
            }
            self.eat(",");
            let at = self.at;
            match self.word() {
                "replicated" => {
                    self.expect("=", "after replicated")?;
                    named.replicated = self.axis_refs(&named.mesh, quoted)?;
                }
                "unreduced" => {
                    self.expect("=", "after unreduced")?;
                    named.unreduced = self.axis_refs(&named.mesh, quoted)?;
                }
                "metadata" => {
                    self.expect("=", "after metadata")?;
                    metadata = Some(self.balanced()?);
                }
                other => {
                    return Err(self.err_at(
                        at,
                        format!("unexpected `{other}` in a named sharding (expected replicated=, unreduced=, metadata= or '}}')"),
                    ))
                }
            }
        }
        if let Err(m) = crate::sharding_named::check(&named) {
            return Err(self.err_at(self.at.saturating_sub(1), m));
        }
        Ok(Sharding {
            kind: ShardingKind::Named(named),
            metadata,
            shard_group: None,
        })
    }

    /// `'name'` (quoted style) or `name`.
    fn axis_name(&mut self, quoted: bool) -> R<String> {
        self.ws();
        if quoted {
            if self.peek() != Some(b'\'') {
                return Err(self.err("expected a quoted axis name ('name')"));
            }
            let start = self.at + 1;
            let end = self.s[start..]
                .find('\'')
                .map(|e| start + e)
                .ok_or_else(|| self.err("the axis name is not closed"))?;
            self.at = end + 1;
            Ok(self.s[start..end].to_string())
        } else {
            let w = self.word();
            if w.is_empty() {
                return Err(self.err("expected an axis name"));
            }
            Ok(w.to_string())
        }
    }

    /// `{axis, axis:(pre)size, ...}`; an open dimension (`?`) is an error.
    fn axis_refs(&mut self, mesh: &[(String, i64)], quoted: bool) -> R<Vec<AxisRef>> {
        self.expect("{", "to start a list of axes")?;
        let mut v = Vec::new();
        if self.eat("}") {
            return Ok(v);
        }
        loop {
            self.ws();
            if self.peek() == Some(b'?') {
                return Err(self.err(
                    "an open dimension sharding ('?') is not supported: hloc needs every \
                     dimension's axes closed",
                ));
            }
            let at = self.at;
            let name = self.axis_name(quoted)?;
            if !mesh.iter().any(|(n, _)| *n == name) {
                return Err(self.err_at(at, format!("axis `{name}` is not in the mesh")));
            }
            let mut sub = None;
            if self.eat(":") {
                let pre = self.int_list("(", ")", "sub-axis pre-size")?;
                let [pre] = pre[..] else {
                    return Err(self.err_at(at, "a sub-axis has one pre-size: name:(pre)size"));
                };
                let size = self.int("the sub-axis size")?;
                sub = Some((pre, size));
            }
            v.push(AxisRef { name, sub });
            if self.eat("}") {
                return Ok(v);
            }
            self.expect(",", "or '}' in a list of axes")?;
        }
    }
}
