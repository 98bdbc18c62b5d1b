//! Attribute text: `, name=value`.

use std::fmt::Write;

use super::Printer;
use crate::attrs::{
    write_aliasing, write_int_list, write_int_list_list, write_slice, AttrValue, Attribute,
    TextValue,
};
use crate::ir::{Computation, MetaValue, Metadata};
use crate::literal::f32_attr_to_string;
use crate::text::write_quoted;

/// True when `s` prints as a bare identifier.
fn is_plain_key(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

impl Printer<'_> {
    /// `, name=value`; `c` resolves instruction references.
    pub(crate) fn attribute(&mut self, c: &Computation, a: &Attribute) {
        self.out.push_str(", ");
        self.out.push_str(a.name.as_str());
        self.out.push('=');
        self.value(c, &a.value);
    }

    fn value(&mut self, c: &Computation, v: &AttrValue) {
        match v {
            AttrValue::Int(i) => {
                let _ = write!(self.out, "{i}");
            }
            AttrValue::Bool(b) => {
                let _ = write!(self.out, "{b}");
            }
            AttrValue::Float(f) => self.out.push_str(&f32_attr_to_string(*f)),
            AttrValue::IntList(l) => write_int_list(&mut self.out, l),
            AttrValue::IntListList(l) => write_int_list_list(&mut self.out, l),
            AttrValue::ReplicaGroups(g) => {
                let _ = write!(self.out, "{g}");
            }
            AttrValue::String(s) => write_quoted(&mut self.out, s),
            AttrValue::Ident(s) | AttrValue::Opaque(s) | AttrValue::Raw(s) => self.out.push_str(s),
            AttrValue::Sharding(s) => self.out.push_str(&s.text),
            AttrValue::IdentList(l) => {
                self.out.push('{');
                self.out.push_str(&l.join(","));
                self.out.push('}');
            }
            AttrValue::Computation(id) => self.comp_name(*id),
            AttrValue::Computations(ids) => {
                self.out.push('{');
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.comp_name(*id);
                }
                self.out.push('}');
            }
            AttrValue::Window(w) => {
                let _ = write!(self.out, "{w}");
            }
            AttrValue::ConvDims(d) => {
                let _ = write!(self.out, "{d}");
            }
            AttrValue::Slice(s) => write_slice(&mut self.out, s),
            AttrValue::Padding(p) => p.write_to(&mut self.out),
            AttrValue::FusionKind(k) => self.out.push_str(k.as_str()),
            AttrValue::ComparisonDirection(d) => self.out.push_str(d.as_str()),
            AttrValue::ComparisonType(t) => self.out.push_str(t.as_str()),
            AttrValue::Shape(s) => self.shape(s),
            AttrValue::Shapes(v) => {
                self.out.push('{');
                for (i, s) in v.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    self.shape(s);
                }
                self.out.push('}');
            }
            AttrValue::Literal(l) => l.write_with_shape(&mut self.out),
            AttrValue::Aliasing(a) => write_aliasing(&mut self.out, a),
            AttrValue::Metadata(m) => self.metadata(m),
            AttrValue::FrontendAttributes(v) => {
                self.out.push('{');
                for (i, (k, val)) in v.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    if is_plain_key(k) {
                        self.out.push_str(k);
                    } else {
                        write_quoted(&mut self.out, k);
                    }
                    self.out.push('=');
                    self.text_value(val);
                }
                self.out.push('}');
            }
            AttrValue::BackendConfig(t) => self.text_value(t),
            AttrValue::Instructions(ids) => {
                self.out.push('{');
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    let name = c.get(*id).map_or("<unknown>", |x| x.name());
                    self.name(name);
                }
                self.out.push('}');
            }
            AttrValue::Bools(b) => {
                self.out.push('{');
                for (i, x) in b.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let _ = write!(self.out, "{x}");
                }
                self.out.push('}');
            }
        }
    }

    fn text_value(&mut self, t: &TextValue) {
        match t {
            TextValue::Quoted(s) => write_quoted(&mut self.out, s),
            TextValue::Dict(d) => self.out.push_str(d),
        }
    }

    fn metadata(&mut self, m: &Metadata) {
        self.out.push('{');
        for (i, (k, v)) in m.entries.iter().enumerate() {
            if i > 0 {
                self.out.push(' ');
            }
            self.out.push_str(k);
            self.out.push('=');
            match v {
                MetaValue::Str(s) => write_quoted(&mut self.out, s),
                MetaValue::Int(n) => {
                    let _ = write!(self.out, "{n}");
                }
                MetaValue::Raw(r) => self.out.push_str(r),
            }
        }
        self.out.push('}');
    }
}
