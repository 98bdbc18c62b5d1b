//! XLA's text of a sharding (`HloSharding::ToString`, and `NamedSharding`'s in the style it
//! was read in), so that a parsed sharding prints back as XLA printed it.

use std::fmt::{self, Write};

use crate::sharding_types::{
    AxisRef, NamedSharding, Sharding, ShardingKind, SubgroupKind, TileAssignment,
};

fn join(f: &mut fmt::Formatter<'_>, v: &[i64], sep: &str) -> fmt::Result {
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            f.write_str(sep)?;
        }
        write!(f, "{x}")?;
    }
    Ok(())
}

impl fmt::Display for TileAssignment {
    /// `[2,2]0,1,2,3` or `[2,2]<=[4]`, `[2,2]<=[2,2]T(1,0)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_char('[')?;
        join(f, self.dims(), ",")?;
        f.write_char(']')?;
        match self {
            TileAssignment::List { devices, .. } => join(f, devices, ","),
            TileAssignment::Iota {
                reshape, transpose, ..
            } => {
                f.write_str("<=[")?;
                join(f, reshape, ",")?;
                f.write_char(']')?;
                if let Some(t) = transpose {
                    f.write_str("T(")?;
                    join(f, t, ",")?;
                    f.write_char(')')?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for AxisRef {
    /// `name` or `name:(pre)size` (quoting is the caller's).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        if let Some((pre, size)) = self.sub {
            write!(f, ":({pre}){size}")?;
        }
        Ok(())
    }
}

fn axes(f: &mut fmt::Formatter<'_>, v: &[AxisRef], quoted: bool) -> fmt::Result {
    f.write_char('{')?;
    for (i, a) in v.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        if quoted {
            write!(f, "'{}'", a.name)?;
            if let Some((pre, size)) = a.sub {
                write!(f, ":({pre}){size}")?;
            }
        } else {
            write!(f, "{a}")?;
        }
    }
    f.write_char('}')
}

impl NamedSharding {
    /// The text between the braces, without metadata.
    fn body(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = self.quoted;
        f.write_str(if q { "mesh[" } else { "@mesh<" })?;
        for (i, (name, size)) in self.mesh.iter().enumerate() {
            if i > 0 {
                f.write_char(',')?;
            }
            if q {
                write!(f, "'{name}'={size}")?;
            } else {
                write!(f, "{name}={size}")?;
            }
        }
        f.write_str(if q { "]" } else { ">" })?;
        if let Some(ids) = &self.mesh_devices {
            f.write_char('(')?;
            join(f, ids, ",")?;
            f.write_char(')')?;
        }
        f.write_str(", [")?;
        for (i, d) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            axes(f, d, q)?;
        }
        f.write_char(']')?;
        if !self.replicated.is_empty() {
            f.write_str(", replicated=")?;
            axes(f, &self.replicated, q)?;
        }
        if !self.unreduced.is_empty() {
            f.write_str(", unreduced=")?;
            axes(f, &self.unreduced, q)?;
        }
        Ok(())
    }
}

impl fmt::Display for Sharding {
    /// XLA's text: `{replicated}`, `{devices=[2,1]0,1 last_tile_dim_replicate}`, ...
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let ShardingKind::Tuple(parts) = &self.kind {
            f.write_char('{')?;
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{p}")?;
            }
            return f.write_char('}');
        }
        f.write_char('{')?;
        match &self.kind {
            ShardingKind::Replicated => f.write_str("replicated")?,
            ShardingKind::Manual => f.write_str("manual")?,
            ShardingKind::Unknown => f.write_str("unknown")?,
            ShardingKind::Unreduced => f.write_str("unreduced")?,
            ShardingKind::Maximal(d) => write!(f, "maximal device={d}")?,
            ShardingKind::Tiled(t) => {
                write!(f, "devices={}", t.tiles)?;
                if t.last_tile_dim_replicate {
                    f.write_str(" last_tile_dim_replicate")?;
                } else if !t.subgroups.is_empty() {
                    f.write_str(" last_tile_dims={")?;
                    for (i, k) in t.subgroups.iter().enumerate() {
                        if i > 0 {
                            f.write_str(", ")?;
                        }
                        f.write_str(match k {
                            SubgroupKind::Replicated => "replicated",
                            SubgroupKind::Manual => "manual",
                            SubgroupKind::Unreduced => "unreduced",
                        })?;
                    }
                    f.write_char('}')?;
                }
            }
            ShardingKind::Named(n) => {
                n.body(f)?;
                if let Some(m) = &self.metadata {
                    write!(f, ", metadata={m}")?;
                }
                return f.write_char('}');
            }
            ShardingKind::Tuple(_) => {}
        }
        if let Some(g) = self.shard_group {
            let kind = if g.shard_as { "shard_as" } else { "shard_like" };
            write!(f, " {kind} {}", g.id)?;
        }
        if let Some(m) = &self.metadata {
            write!(f, " metadata={m}")?;
        }
        f.write_char('}')
    }
}
