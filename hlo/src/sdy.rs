//! The Shardy text JAX writes around a `shard_map` body (`xla.sdy.GlobalToLocalShape` /
//! `xla.sdy.LocalToGlobalShape` custom calls): the module's meshes
//! (`xla.sdy.meshes={mesh = #sdy.mesh<["x"=4]>}`), the per-value shardings of the
//! region's inputs and outputs (`#sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>`) and its
//! manual axes (`#sdy<manual_axes{"x"}>`), read into the named-mesh [`Sharding`] so that
//! they become tiles as every other annotation does. Here in `hlo` because both the
//! partitioner (`spmd`) and the evaluator's global meaning of these calls (`hlo-eval`)
//! read them.
//!
//! Read: axis lists per dimension with sub-axes (`"x":(1)2`), open dimensions (`{?}`,
//! `{"x", ?}`) and priorities (`p0`, ignored: they only order propagation), `replicated=`
//! and `unreduced=`, meshes by name or inline (`<mesh<["x"=4]>, ...>`), `device_ids=`.

use crate::ir::Module;
use crate::sharding::{AxisRef, NamedSharding, Sharding, ShardingKind};

/// A named mesh: axes with sizes, and the device order when not `0..n`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mesh {
    /// Axis names with sizes, major to minor.
    pub axes: Vec<(String, i64)>,
    /// The mesh's devices in row-major order, when not `0..n`.
    pub devices: Option<Vec<i64>>,
}

/// The meshes of `module`'s `xla.sdy.meshes` frontend attribute, by name.
pub fn meshes(module: &Module) -> Result<Vec<(String, Mesh)>, String> {
    let Some(raw) = module.attrs().iter().find_map(|a| match &a.value {
        crate::ir::ModuleAttrValue::Raw(text) if a.name == "frontend_attributes" => {
            Some(text.clone())
        }
        _ => None,
    }) else {
        return Ok(Vec::new());
    };
    let text = raw.replace("\\\"", "\"");
    let Some(at) = text.find("xla.sdy.meshes=") else {
        return Ok(Vec::new());
    };
    let mut p = Text::new(&text[at + "xla.sdy.meshes=".len()..]);
    p.eat("\"");
    p.expect("{")?;
    let mut out = Vec::new();
    if p.eat("}") {
        return Ok(out);
    }
    loop {
        let name = p.ident()?;
        p.expect("=")?;
        p.expect("#sdy.mesh")?;
        out.push((name, p.mesh_body()?));
        if p.eat("}") {
            return Ok(out);
        }
        p.expect(",")?;
    }
}

/// The shardings of `#sdy.sharding_per_value<[...]>` (`text` with `\"` unescaped or not).
pub fn sharding_per_value(text: &str, meshes: &[(String, Mesh)]) -> Result<Vec<Sharding>, String> {
    let text = text.replace("\\\"", "\"");
    let mut p = Text::new(&text);
    p.expect("#sdy.sharding_per_value<[")?;
    let mut out = Vec::new();
    if p.eat("]") {
        return Ok(out);
    }
    loop {
        out.push(p.sharding(meshes)?);
        if p.eat("]") {
            break;
        }
        p.expect(",")?;
    }
    p.expect(">")?;
    Ok(out)
}

/// The axis names of `#sdy<manual_axes{"x", "y"}>`.
pub fn manual_axes(text: &str) -> Result<Vec<String>, String> {
    let text = text.replace("\\\"", "\"");
    let mut p = Text::new(&text);
    p.expect("#sdy<manual_axes{")?;
    let mut out = Vec::new();
    if p.eat("}") {
        return Ok(out);
    }
    loop {
        out.push(p.quoted()?);
        if p.eat("}") {
            return Ok(out);
        }
        p.expect(",")?;
    }
}

/// A cursor over Shardy text.
struct Text<'a> {
    s: &'a str,
    at: usize,
}

impl<'a> Text<'a> {
    fn new(s: &'a str) -> Text<'a> {
        Text { s, at: 0 }
    }

    fn rest(&self) -> &'a str {
        &self.s[self.at..]
    }

    fn ws(&mut self) {
        let r = self.rest();
        self.at += r.len() - r.trim_start().len();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        if self.rest().starts_with(token) {
            self.at += token.len();
            return true;
        }
        false
    }

    fn expect(&mut self, token: &str) -> Result<(), String> {
        match self.eat(token) {
            true => Ok(()),
            false => Err(format!(
                "expected `{token}` at `{}` in Shardy text",
                self.rest().chars().take(40).collect::<String>()
            )),
        }
    }

    fn ident(&mut self) -> Result<String, String> {
        self.ws();
        let r = self.rest();
        let n = r
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '$'))
            .unwrap_or(r.len());
        if n == 0 {
            return Err(format!(
                "expected a name at `{}`",
                r.chars().take(40).collect::<String>()
            ));
        }
        self.at += n;
        Ok(r[..n].to_string())
    }

    fn quoted(&mut self) -> Result<String, String> {
        self.expect("\"")?;
        let r = self.rest();
        let n = r
            .find('"')
            .ok_or("an unclosed quoted name in Shardy text")?;
        self.at += n + 1;
        Ok(r[..n].to_string())
    }

    fn int(&mut self) -> Result<i64, String> {
        self.ws();
        let r = self.rest();
        let n = r
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(r.len());
        let v = r[..n].parse::<i64>().map_err(|_| {
            format!(
                "expected an integer at `{}`",
                r.chars().take(20).collect::<String>()
            )
        })?;
        self.at += n;
        Ok(v)
    }

    /// `<["a"=2, "b"=4](, device_ids=[...])?>` after `#sdy.mesh` or `mesh`.
    fn mesh_body(&mut self) -> Result<Mesh, String> {
        self.expect("<")?;
        self.expect("[")?;
        let mut axes = Vec::new();
        if !self.eat("]") {
            loop {
                let name = self.quoted()?;
                self.expect("=")?;
                axes.push((name, self.int()?));
                if self.eat("]") {
                    break;
                }
                self.expect(",")?;
            }
        }
        let mut devices = None;
        if self.eat(",") {
            self.expect("device_ids")?;
            self.expect("=")?;
            self.expect("[")?;
            let mut ids = Vec::new();
            if !self.eat("]") {
                loop {
                    ids.push(self.int()?);
                    if self.eat("]") {
                        break;
                    }
                    self.expect(",")?;
                }
            }
            devices = Some(ids);
        }
        self.expect(">")?;
        Ok(Mesh { axes, devices })
    }

    /// `<@mesh, [{"x"}, {}], replicated={"y"}>` as a named sharding.
    fn sharding(&mut self, meshes: &[(String, Mesh)]) -> Result<Sharding, String> {
        self.expect("<")?;
        let mesh = if self.eat("@") {
            let name = self.ident()?;
            meshes
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, m)| m.clone())
                .ok_or_else(|| format!("no mesh `{name}` in the module's xla.sdy.meshes"))?
        } else {
            self.expect("mesh")?;
            self.mesh_body()?
        };
        self.expect(",")?;
        self.expect("[")?;
        let mut dims = Vec::new();
        if !self.eat("]") {
            loop {
                dims.push(self.axis_list()?);
                if self.eat("]") {
                    break;
                }
                self.expect(",")?;
            }
        }
        let mut replicated = Vec::new();
        let mut unreduced = Vec::new();
        while self.eat(",") {
            if self.eat("replicated") {
                self.expect("=")?;
                replicated = self.axis_list()?;
            } else if self.eat("unreduced") {
                self.expect("=")?;
                unreduced = self.axis_list()?;
            } else {
                return Err(format!(
                    "unexpected `{}` in a Shardy sharding",
                    self.rest().chars().take(30).collect::<String>()
                ));
            }
        }
        self.expect(">")?;
        let named = NamedSharding {
            mesh: mesh.axes,
            mesh_devices: mesh.devices,
            dims,
            replicated,
            unreduced,
            quoted: true,
        };
        Ok(Sharding::new(ShardingKind::Named(named)))
    }

    /// `{"x", "y":(1)2, ?}p0`: the axes (open marks and priorities dropped).
    fn axis_list(&mut self) -> Result<Vec<AxisRef>, String> {
        self.expect("{")?;
        let mut out = Vec::new();
        loop {
            if self.eat("}") {
                break;
            }
            if self.eat("?") {
                self.eat(",");
                continue;
            }
            let name = self.quoted()?;
            let sub = match self.eat(":") {
                true => {
                    self.expect("(")?;
                    let pre = self.int()?;
                    self.expect(")")?;
                    Some((pre, self.int()?))
                }
                false => None,
            };
            out.push(AxisRef { name, sub });
            self.eat(",");
        }
        if self.eat("p") {
            self.int()?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_meshes_shardings_and_manual_axes() {
        let m = crate::parse_module(
            "HloModule m, frontend_attributes={xla.sdy.meshes={mesh = #sdy.mesh<[\"a\"=2, \"b\"=4]>, m2 = #sdy.mesh<[\"z\"=2], device_ids=[1,0]>}}\n\nENTRY e {\n  ROOT p = f32[2] parameter(0)\n}\n",
        )
        .expect("parses");
        let meshes = meshes(&m).expect("meshes");
        assert_eq!(meshes.len(), 2);
        assert_eq!(meshes[1].1.devices, Some(vec![1, 0]));
        let s = sharding_per_value(
            "#sdy.sharding_per_value<[<@mesh, [{\"a\"}, {\"b\", ?}p1]>, <@m2, [{}], replicated={\"z\"}>]>",
            &meshes,
        )
        .expect("shardings");
        let t = s[0].as_tiled(2).expect("tiles").expect("tiled");
        assert_eq!(t.data_tiles(), &[2, 4]);
        assert_eq!(s[0].tile_of(5, 2).expect("tile"), Some(vec![1, 1]));
        assert_eq!(s[1].tile_of(1, 1).expect("tile"), Some(vec![0]));
        // Both devices hold the whole value, in the mesh's device order.
        assert_eq!(s[1].devices_of_tile(&[0], 2).expect("devices"), vec![1, 0]);
        assert_eq!(
            manual_axes("#sdy<manual_axes{\"a\", \"b\"}>").expect("axes"),
            vec!["a".to_string(), "b".to_string()]
        );
        assert!(sharding_per_value("#sdy.sharding_per_value<[<@nope, []>]>", &meshes).is_err());
    }
}
