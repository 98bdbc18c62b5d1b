//! Attribute values, by kind.

use std::borrow::Cow;

use super::lexer::Tok;
use super::{PResult, Parser, Scope};
use crate::attrs::{
    AttrKind, AttrValue, ComparisonDirection, ComparisonType, ConvDimensionNumbers, FusionKind,
    MeshDeviceIds, OutputOperandAlias, PaddingConfig, PaddingDim, ReplicaGroups, SliceDim,
    TextValue, Window, WindowDim,
};
use crate::ir::{CompId, MetaValue, Metadata, INT_KEYS, STRING_KEYS};
use crate::text::unescape;

impl<'a> Parser<'a> {
    /// The value of an attribute of a known kind.
    pub(crate) fn parse_attr_value(
        &mut self,
        kind: AttrKind,
        scope: &Scope<'a>,
    ) -> PResult<AttrValue> {
        Ok(match kind {
            AttrKind::Int => AttrValue::Int(self.parse_i64()?),
            AttrKind::Bool => AttrValue::Bool(self.parse_bool()?),
            AttrKind::Float => AttrValue::Float(self.parse_f32()?),
            AttrKind::IntList => AttrValue::IntList(self.parse_int_list(Tok::LBrace, Tok::RBrace)?),
            AttrKind::IntListList => AttrValue::IntListList(self.parse_int_list_list()?),
            AttrKind::ReplicaGroups => {
                AttrValue::ReplicaGroups(Box::new(self.parse_replica_groups()?))
            }
            AttrKind::String => AttrValue::String(self.parse_string()?),
            AttrKind::Ident => {
                let t = self.expect(Tok::Ident, "expected an identifier")?;
                AttrValue::Ident(self.lex.text(t).to_string())
            }
            AttrKind::IdentList => {
                let mut v = Vec::new();
                self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
                    let t = p.expect(Tok::Ident, "expected an identifier")?;
                    v.push(p.lex.text(t).to_string());
                    Ok(())
                })?;
                AttrValue::IdentList(v)
            }
            AttrKind::Computation => AttrValue::Computation(self.parse_computation_ref()?),
            AttrKind::Computations => {
                let mut v = Vec::new();
                self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
                    v.push(p.parse_computation_ref()?);
                    Ok(())
                })?;
                AttrValue::Computations(v)
            }
            AttrKind::Window => AttrValue::Window(self.parse_window()?),
            AttrKind::ConvDims => AttrValue::ConvDims(Box::new(self.parse_conv_dims()?)),
            AttrKind::Slice => AttrValue::Slice(self.parse_slice()?),
            AttrKind::Padding => AttrValue::Padding(self.parse_padding()?),
            AttrKind::FusionKind => {
                AttrValue::FusionKind(self.parse_enum::<FusionKind>("fusion kind")?)
            }
            AttrKind::ComparisonDirection => AttrValue::ComparisonDirection(
                self.parse_enum::<ComparisonDirection>("comparison direction")?,
            ),
            AttrKind::ComparisonType => {
                AttrValue::ComparisonType(self.parse_enum::<ComparisonType>("comparison type")?)
            }
            AttrKind::Shape => AttrValue::Shape(Box::new(self.parse_shape()?)),
            AttrKind::Shapes => {
                let mut v = Vec::new();
                self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
                    v.push(p.parse_shape()?);
                    Ok(())
                })?;
                AttrValue::Shapes(v)
            }
            AttrKind::Literal => AttrValue::Literal(Box::new(self.parse_literal_with_shape()?)),
            AttrKind::Aliasing => AttrValue::Aliasing(self.parse_aliasing()?),
            AttrKind::Metadata => AttrValue::Metadata(Box::new(self.parse_metadata()?)),
            AttrKind::FrontendAttributes => {
                AttrValue::FrontendAttributes(self.parse_frontend_attributes()?)
            }
            AttrKind::BackendConfig => AttrValue::BackendConfig(self.parse_text_value()?),
            AttrKind::Instructions => {
                let mut v = Vec::new();
                self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
                    let (name, at) = p.parse_instr_name("an instruction name")?;
                    let id = scope.names.get(name).copied().ok_or_else(|| {
                        p.error_at(at, format!("instruction `{name}` is not defined"))
                    })?;
                    v.push(id);
                    Ok(())
                })?;
                AttrValue::Instructions(v)
            }
            AttrKind::Bools => {
                let mut v = Vec::new();
                self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
                    v.push(p.parse_bool()?);
                    Ok(())
                })?;
                AttrValue::Bools(v)
            }
            AttrKind::Opaque => AttrValue::Opaque(self.parse_raw()?),
        })
    }

    /// A verbatim value (see [`super::lexer::Lexer::raw_value`]).
    pub(crate) fn parse_raw(&mut self) -> PResult<String> {
        match self.lex.raw_value() {
            Ok((s, e)) => Ok(self.src[s..e].to_string()),
            Err(at) => Err(self.error_at(at, self.lex.error_message())),
        }
    }

    /// `open item (',' item)* close`, possibly empty.
    pub(crate) fn parse_list(
        &mut self,
        open: Tok,
        close: Tok,
        mut item: impl FnMut(&mut Self) -> PResult<()>,
    ) -> PResult<()> {
        self.expect(open, "expected a list")?;
        if self.eat(close) {
            return Ok(());
        }
        loop {
            item(self)?;
            if self.eat(Tok::Comma) {
                continue;
            }
            self.expect(close, "expected ',' or the end of the list")?;
            return Ok(());
        }
    }

    pub(crate) fn parse_bool(&mut self) -> PResult<bool> {
        let t = self.lex.peek();
        match (t.kind, self.lex.text(t)) {
            (Tok::Ident, "true") => {
                self.lex.next();
                Ok(true)
            }
            (Tok::Ident, "false") => {
                self.lex.next();
                Ok(false)
            }
            _ => Err(self.error_token(t, "expected true or false")),
        }
    }

    fn parse_f32(&mut self) -> PResult<f32> {
        let t = self.lex.next();
        let v: Option<f64> = match t.kind {
            Tok::Int | Tok::Float => self.lex.text(t).parse::<f64>().ok(),
            _ => None,
        };
        let v = v.ok_or_else(|| self.error_token(t, "expected a number"))?;
        if v.is_finite() && v.abs() > f64::from(f32::MAX) {
            return Err(self.error_at(t.start, "value out of range for float"));
        }
        Ok(v as f32)
    }

    pub(crate) fn parse_string(&mut self) -> PResult<String> {
        let t = self.expect(Tok::Str, "expected a quoted string")?;
        let raw = self.lex.text(t);
        unescape(&raw[1..raw.len() - 1]).map_err(|m| self.error_at(t.start, m))
    }

    fn parse_enum<T: std::str::FromStr>(&mut self, what: &str) -> PResult<T> {
        let t = self.lex.next();
        if t.kind == Tok::Ident {
            if let Ok(v) = self.lex.text(t).parse::<T>() {
                return Ok(v);
            }
        }
        Err(self.error_token(t, format!("expected a {what}")))
    }

    pub(crate) fn parse_int_list(&mut self, open: Tok, close: Tok) -> PResult<Vec<i64>> {
        let mut v = Vec::new();
        self.parse_list(open, close, |p| {
            v.push(p.parse_i64()?);
            Ok(())
        })?;
        Ok(v)
    }

    fn parse_int_list_list(&mut self) -> PResult<Vec<Vec<i64>>> {
        let mut v = Vec::new();
        self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
            v.push(p.parse_int_list(Tok::LBrace, Tok::RBrace)?);
            Ok(())
        })?;
        Ok(v)
    }

    /// `{{0,1},{2,3}}` or `[groups,size]<=[dims]` with an optional `T(perm)`.
    fn parse_replica_groups(&mut self) -> PResult<ReplicaGroups> {
        if self.lex.peek().kind == Tok::LBrace {
            return Ok(ReplicaGroups::List(self.parse_int_list_list()?));
        }
        if self.at_ident("mesh") {
            return self.parse_mesh_replica_groups();
        }
        let at = self.lex.offset();
        let shape = self.parse_int_list(Tok::LSquare, Tok::RSquare)?;
        let [num_groups, group_size] = shape[..] else {
            return Err(self.error_at(at, "iota replica groups need [num_groups,group_size]"));
        };
        self.expect(Tok::Leq, "expected '<=' in iota replica groups")?;
        let dims_at = self.lex.offset();
        let reshape_dims = self.parse_int_list(Tok::LSquare, Tok::RSquare)?;
        let product = |d: &[i64]| {
            d.iter().try_fold(1i64, |acc, &x| {
                (x >= 0).then(|| acc.checked_mul(x)).flatten()
            })
        };
        let devices = product(&[num_groups, group_size]);
        if devices.is_none() || product(&reshape_dims) != devices {
            let show = |n: Option<i64>| n.map_or("an invalid number of".into(), |n| n.to_string());
            return Err(self.error_at(
                dims_at,
                format!(
                    "iota replica groups [{num_groups},{group_size}] hold {} devices but the iota's reshape dimensions hold {}",
                    show(devices),
                    show(product(&reshape_dims))
                ),
            ));
        }
        let transpose = self.parse_iota_transpose(reshape_dims.len())?;
        Ok(ReplicaGroups::Iota {
            num_groups,
            group_size,
            reshape_dims,
            transpose,
        })
    }

    /// An optional `T(perm)` right after an iota's reshape dimensions; `perm` must be a
    /// permutation of the `rank` dimensions.
    fn parse_iota_transpose(&mut self, rank: usize) -> PResult<Option<Vec<i64>>> {
        if !(self.at_ident("T") && self.lex.next_byte_is(b'T')) {
            return Ok(None);
        }
        self.lex.next();
        let perm_at = self.lex.offset();
        let perm = self.parse_int_list(Tok::LParen, Tok::RParen)?;
        let mut sorted = perm.clone();
        sorted.sort_unstable();
        if sorted.len() != rank || sorted.iter().enumerate().any(|(k, &p)| p != k as i64) {
            return Err(self.error_at(
                perm_at,
                format!("the iota transpose is not a permutation of its {rank} reshape dimensions"),
            ));
        }
        Ok(Some(perm))
    }

    /// `, device_ids=([4,2]T(1,0))` or `, device_ids=(0,2,1,3)` after a mesh's axes (XLA
    /// prints it for a mesh whose devices are not `0..n` in order): the device at each
    /// row-major position of a mesh of `devices` positions. Like XLA's mesh check, the
    /// iota must hold `devices` ids and a list must be a permutation of `0..devices`
    /// other than `0..devices` itself.
    fn parse_mesh_device_ids(&mut self, devices: i64) -> PResult<Option<MeshDeviceIds>> {
        let after = self.lex.peek2();
        if !(self.lex.peek().kind == Tok::Comma
            && after.kind == Tok::Ident
            && self.lex.text(after) == "device_ids")
        {
            return Ok(None);
        }
        self.lex.next();
        self.lex.next();
        self.expect(Tok::Equal, "expected '=' after device_ids")?;
        let at = self.lex.offset();
        if self.lex.peek2().kind == Tok::LSquare {
            self.expect(Tok::LParen, "expected '(' to start the mesh's device ids")?;
            let dims_at = self.lex.offset();
            let reshape_dims = self.parse_int_list(Tok::LSquare, Tok::RSquare)?;
            let total = reshape_dims
                .iter()
                .try_fold(1i64, |acc, &d| (d > 0).then(|| acc.checked_mul(d))?);
            if total != Some(devices) {
                return Err(self.error_at(
                    dims_at,
                    format!("the mesh has {devices} devices but its device_ids iota does not hold {devices} ids"),
                ));
            }
            let transpose = self.parse_iota_transpose(reshape_dims.len())?;
            self.expect(Tok::RParen, "expected ')' to end the mesh's device ids")?;
            return Ok(Some(MeshDeviceIds::Iota {
                reshape_dims,
                transpose,
            }));
        }
        let ids = self.parse_int_list(Tok::LParen, Tok::RParen)?;
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        let permutation =
            ids.len() as i64 == devices && sorted.iter().enumerate().all(|(k, &d)| d == k as i64);
        if !permutation {
            return Err(self.error_at(
                at,
                format!("the mesh's device_ids must be a permutation of 0..{devices}"),
            ));
        }
        if ids == sorted {
            return Err(self.error_at(
                at,
                "the mesh's device_ids are 0..n in order: write the mesh without device_ids",
            ));
        }
        Ok(Some(MeshDeviceIds::List(ids)))
    }

    /// `mesh['a'=2,'b'=4] {'b'}`: named mesh axes with their sizes, an optional
    /// `, device_ids=(..)`, then the axes the groups span.
    fn parse_mesh_replica_groups(&mut self) -> PResult<ReplicaGroups> {
        self.lex.next();
        let mut axes: Vec<(String, i64)> = Vec::new();
        self.parse_list(Tok::LSquare, Tok::RSquare, |p| {
            let at = p.lex.offset();
            let name = p.parse_string()?;
            p.expect(Tok::Equal, "expected '=' after a mesh axis name")?;
            let size_at = p.lex.offset();
            let size = p.parse_i64()?;
            if size <= 0 {
                return Err(p.error_at(size_at, "a mesh axis size must be positive"));
            }
            if axes.iter().any(|(n, _)| *n == name) {
                return Err(p.error_at(at, format!("mesh axis '{name}' is given twice")));
            }
            axes.push((name, size));
            Ok(())
        })?;
        let devices_at = self.lex.offset();
        let Some(devices) = axes
            .iter()
            .try_fold(1i64, |acc, (_, d)| acc.checked_mul(*d))
        else {
            return Err(self.error_at(devices_at, "the mesh holds too many devices"));
        };
        let device_ids = self.parse_mesh_device_ids(devices)?;
        let mut group_axes: Vec<String> = Vec::new();
        self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
            let at = p.lex.offset();
            let name = p.parse_string()?;
            if !axes.iter().any(|(n, _)| *n == name) {
                return Err(p.error_at(at, format!("the mesh has no axis '{name}'")));
            }
            if group_axes.contains(&name) {
                return Err(p.error_at(at, format!("mesh axis '{name}' is given twice")));
            }
            group_axes.push(name);
            Ok(())
        })?;
        Ok(ReplicaGroups::Mesh {
            axes,
            device_ids,
            group_axes,
        })
    }

    /// A computation name (`%add`, `add`) or an inline `{ ... }` computation.
    pub(crate) fn parse_computation_ref(&mut self) -> PResult<CompId> {
        if self.lex.peek().kind == Tok::LBrace {
            let at = self.lex.offset();
            self.descend(at)?;
            let body = self.parse_body("_", at, false)?;
            self.ascend();
            let id = self.push_generated(body.comp, body.offsets);
            self.adopt_steps(id, body.steps);
            return Ok(id);
        }
        let (name, at) = self.parse_name("a computation name")?;
        self.comp_names.get(name).copied().ok_or_else(|| {
            self.error_at(
                at,
                format!(
                    "computation `{name}` is not defined (computations must be defined before use)"
                ),
            )
        })
    }

    /// `{size=2x3 stride=.. pad=lo_hi x.. lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`.
    fn parse_window(&mut self) -> PResult<Window> {
        let at = self.lex.offset();
        self.expect(Tok::LBrace, "expected '{' to start a window")?;
        let mut fields: [Option<Vec<i64>>; 5] = Default::default();
        let mut pad: Option<Vec<(i64, i64)>> = None;
        while !self.eat(Tok::RBrace) {
            let t = self.expect(Tok::Ident, "expected a window field (size, stride, pad, lhs_dilate, rhs_dilate, rhs_reversal) or '}'")?;
            let field = self.lex.text(t);
            self.expect(Tok::Equal, "expected '='")?;
            let w = self.lex.word();
            let text = self.lex.text(w);
            let bad = || self.error_at(w.start, format!("invalid window {field} `{text}`"));
            let slot = match field {
                "size" => 0,
                "stride" => 1,
                "lhs_dilate" => 2,
                "rhs_dilate" => 3,
                "rhs_reversal" => 4,
                "pad" => {
                    let mut v = Vec::new();
                    for d in text.split('x') {
                        let parts = split_ints(d, '_').ok_or_else(bad)?;
                        let [lo, hi] = parts[..] else {
                            return Err(bad());
                        };
                        v.push((lo, hi));
                    }
                    if pad.replace(v).is_some() {
                        return Err(self.error_at(t.start, "window field `pad` given twice"));
                    }
                    continue;
                }
                _ => return Err(self.error_at(t.start, format!("unknown window field `{field}`"))),
            };
            let v = split_ints(text, 'x').ok_or_else(bad)?;
            if fields[slot].replace(v).is_some() {
                return Err(self.error_at(t.start, format!("window field `{field}` given twice")));
            }
        }
        let size = fields[0].take().unwrap_or_default();
        let n = size.len();
        if fields[1..]
            .iter()
            .any(|f| f.as_ref().is_some_and(|v| v.len() != n))
            || pad.as_ref().is_some_and(|p| p.len() != n)
        {
            return Err(self.error_at(
                at,
                "every window field must have as many dimensions as `size`",
            ));
        }
        let dims = (0..n)
            .map(|i| {
                let get = |f: &Option<Vec<i64>>, d: i64| f.as_ref().map_or(d, |v| v[i]);
                let (lo, hi) = pad.as_ref().map_or((0, 0), |p| p[i]);
                WindowDim {
                    size: size[i],
                    stride: get(&fields[1], 1),
                    padding_low: lo,
                    padding_high: hi,
                    base_dilation: get(&fields[2], 1),
                    window_dilation: get(&fields[3], 1),
                    reversal: get(&fields[4], 0) == 1,
                }
            })
            .collect();
        Ok(Window { dims })
    }

    /// `b01f_01io->b01f`.
    fn parse_conv_dims(&mut self) -> PResult<ConvDimensionNumbers> {
        let w = self.lex.word();
        let text = self.lex.text(w);
        parse_dim_labels(text)
            .map_err(|m| self.error_at(w.start, format!("invalid dim_labels `{text}`: {m}")))
    }

    /// `{[0:2], [1:8:2]}`.
    fn parse_slice(&mut self) -> PResult<Vec<SliceDim>> {
        let mut v = Vec::new();
        self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
            let at = p.lex.offset();
            let r = p.parse_colon_list()?;
            let d = match r[..] {
                [start, limit] => SliceDim {
                    start,
                    limit,
                    stride: 1,
                },
                [start, limit, stride] => SliceDim {
                    start,
                    limit,
                    stride,
                },
                _ => return Err(p.error_at(at, "expected [start:limit] or [start:limit:stride]")),
            };
            v.push(d);
            Ok(())
        })?;
        Ok(v)
    }

    fn parse_colon_list(&mut self) -> PResult<Vec<i64>> {
        self.expect(Tok::LSquare, "expected '['")?;
        let mut v = vec![self.parse_i64()?];
        while self.eat(Tok::Colon) {
            v.push(self.parse_i64()?);
        }
        self.expect(Tok::RSquare, "expected ':' or ']'")?;
        Ok(v)
    }

    /// `0_0x1_2_1` (low_high[_interior] per dimension, `x`-separated).
    fn parse_padding(&mut self) -> PResult<PaddingConfig> {
        let w = self.lex.word();
        let text = self.lex.text(w);
        if text.is_empty() {
            return Ok(PaddingConfig::default());
        }
        let mut dims = Vec::new();
        for d in text.split('x') {
            let parts = split_ints(d, '_');
            let dim = match parts.as_deref() {
                Some(&[low, high]) => PaddingDim { low, high, interior: 0 },
                Some(&[low, high, interior]) => PaddingDim { low, high, interior },
                _ => return Err(self.error_at(w.start, format!("invalid padding `{text}` (expected low_high[_interior] per dimension, x-separated)"))),
            };
            dims.push(dim);
        }
        Ok(PaddingConfig { dims })
    }

    /// `{{0}: (1, {}), ...}`.
    fn parse_aliasing(&mut self) -> PResult<Vec<OutputOperandAlias>> {
        let mut v = Vec::new();
        self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
            let output_index = p.parse_int_list(Tok::LBrace, Tok::RBrace)?;
            p.expect(Tok::Colon, "expected ':' after the output index")?;
            p.expect(Tok::LParen, "expected '('")?;
            let operand = p.parse_i64()?;
            p.expect(Tok::Comma, "expected ','")?;
            let operand_index = p.parse_int_list(Tok::LBrace, Tok::RBrace)?;
            p.expect(Tok::RParen, "expected ')'")?;
            v.push(OutputOperandAlias {
                output_index,
                operand,
                operand_index,
            });
            Ok(())
        })?;
        Ok(v)
    }

    /// `{op_type="..." op_name="..." source_line=3 ...}` (commas optional).
    fn parse_metadata(&mut self) -> PResult<Metadata> {
        self.expect(Tok::LBrace, "expected '{' to start metadata")?;
        // Collect in a reused buffer so the entries are allocated once at their exact size.
        let mut entries = std::mem::take(&mut self.meta_scratch);
        entries.clear();
        loop {
            self.eat(Tok::Comma);
            if self.eat(Tok::RBrace) {
                let mut exact = Vec::with_capacity(entries.len());
                exact.append(&mut entries);
                let m = Metadata { entries: exact };
                self.meta_scratch = entries;
                return Ok(m);
            }
            let t = self.expect(Tok::Ident, "expected a metadata key or '}'")?;
            let key = self.lex.text(t);
            self.expect(Tok::Equal, "expected '=' after the metadata key")?;
            let (key, value): (Cow<'static, str>, MetaValue) =
                if let Some(k) = STRING_KEYS.iter().find(|k| **k == key) {
                    (Cow::Borrowed(*k), MetaValue::Str(self.parse_string()?))
                } else if let Some(k) = INT_KEYS.iter().find(|k| **k == key) {
                    (Cow::Borrowed(*k), MetaValue::Int(self.parse_i64()?))
                } else {
                    (
                        Cow::Owned(key.to_string()),
                        MetaValue::Raw(self.parse_raw()?),
                    )
                };
            entries.push((key, value));
        }
    }

    /// A quoted string or a `{...}` dictionary.
    fn parse_text_value(&mut self) -> PResult<TextValue> {
        if self.lex.peek().kind == Tok::LBrace {
            return match self.lex.dict() {
                Ok((s, e)) => Ok(TextValue::Dict(self.src[s..e].to_string())),
                Err(at) => Err(self.error_at(at, self.lex.error_message())),
            };
        }
        Ok(TextValue::Quoted(self.parse_string()?))
    }

    /// `{key="value", key={...}}`.
    fn parse_frontend_attributes(&mut self) -> PResult<Vec<(String, TextValue)>> {
        let mut v = Vec::new();
        self.parse_list(Tok::LBrace, Tok::RBrace, |p| {
            let t = p.lex.next();
            let key = match t.kind {
                Tok::Ident => p.lex.text(t).to_string(),
                Tok::Str => {
                    let raw = p.lex.text(t);
                    unescape(&raw[1..raw.len() - 1]).map_err(|m| p.error_at(t.start, m))?
                }
                _ => return Err(p.error_token(t, "expected a frontend attribute name")),
            };
            p.expect(Tok::Equal, "expected '='")?;
            v.push((key, p.parse_text_value()?));
            Ok(())
        })?;
        Ok(v)
    }
}

/// Splits `s` on `sep` into integers.
fn split_ints(s: &str, sep: char) -> Option<Vec<i64>> {
    s.split(sep).map(|x| x.parse::<i64>().ok()).collect()
}

/// Parses convolution dimension labels (`b01f_01io->b01f`, `?` for unlabelled positions).
pub(crate) fn parse_dim_labels(s: &str) -> Result<ConvDimensionNumbers, String> {
    let (lhs, rest) = s.split_once('_').ok_or("expected lhs_rhs->out")?;
    let (rhs, out) = rest.split_once("->").ok_or("expected lhs_rhs->out")?;
    struct Side {
        a: i64,
        b: i64,
        spatial: Vec<i64>,
    }
    let side = |text: &str, ca: char, cb: char| -> Result<Side, String> {
        let spatial_count = text
            .chars()
            .filter(|&c| c != ca && c != cb && c != '?')
            .count();
        let mut spatial = vec![-1i64; spatial_count];
        let (mut a, mut b) = (-1i64, -1i64);
        for (i, c) in text.chars().enumerate() {
            let i = i as i64;
            let slot = if c == ca {
                &mut a
            } else if c == cb {
                &mut b
            } else if c == '?' {
                continue;
            } else {
                let d = c
                    .to_digit(10)
                    .filter(|&d| (d as usize) < spatial_count)
                    .ok_or_else(|| format!("unexpected `{c}` in `{text}`"))?;
                &mut spatial[d as usize]
            };
            if *slot != -1 {
                return Err(format!("`{c}` appears twice in `{text}`"));
            }
            *slot = i;
        }
        if a < 0 || b < 0 {
            return Err(format!("`{text}` needs both `{ca}` and `{cb}`"));
        }
        Ok(Side { a, b, spatial })
    };
    let l = side(lhs, 'b', 'f')?;
    let k = side(rhs, 'i', 'o')?;
    let o = side(out, 'b', 'f')?;
    if l.spatial.len() != k.spatial.len() || l.spatial.len() != o.spatial.len() {
        return Err("input, kernel and output need the same number of spatial dimensions".into());
    }
    Ok(ConvDimensionNumbers {
        input_batch_dimension: l.a,
        input_feature_dimension: l.b,
        input_spatial_dimensions: l.spatial,
        kernel_input_feature_dimension: k.a,
        kernel_output_feature_dimension: k.b,
        kernel_spatial_dimensions: k.spatial,
        output_batch_dimension: o.a,
        output_feature_dimension: o.b,
        output_spatial_dimensions: o.spatial,
        input_rank: lhs.chars().count(),
        kernel_rank: rhs.chars().count(),
        output_rank: out.chars().count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dim_labels() {
        let d = parse_dim_labels("b01f_01io->b01f").unwrap();
        assert_eq!(d.input_spatial_dimensions, vec![1, 2]);
        assert_eq!(d.kernel_output_feature_dimension, 3);
        assert_eq!(d.to_string(), "b01f_01io->b01f");
        let d = parse_dim_labels("f0?b_i0o->?b0f").unwrap();
        assert_eq!(d.to_string(), "f0?b_i0o->?b0f");
        assert!(parse_dim_labels("bb_io->bf").is_err());
        assert!(parse_dim_labels("b2f_0io->b0f").is_err());
        assert!(parse_dim_labels("b0f_io->b0f").is_err());
    }
}
