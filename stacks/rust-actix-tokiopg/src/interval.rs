//! PostgreSQL `interval`, which tokio-postgres has no type for.
//!
//! Decoded from the binary wire format (i64 microseconds, i32 days, i32 months) and serialized as
//! an ISO 8601 duration the way PostgreSQL's `IntervalStyle = iso_8601` writes it, each field with
//! its own sign: `P1M2DT3H4M5.5S`, `P-1Y-2M3DT-4H-5M-6S`, `PT0S`.

use std::{error::Error, fmt};

use serde::{Serialize, Serializer};
use tokio_postgres::types::{FromSql, Type};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub microseconds: i64,
}

impl<'a> FromSql<'a> for Interval {
    fn from_sql(_ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn Error + Sync + Send>> {
        let raw: &[u8; 16] = raw
            .try_into()
            .map_err(|_| "invalid interval: expected 16 bytes")?;
        Ok(Interval {
            microseconds: i64::from_be_bytes(raw[0..8].try_into()?),
            days: i32::from_be_bytes(raw[8..12].try_into()?),
            months: i32::from_be_bytes(raw[12..16].try_into()?),
        })
    }

    fn accepts(ty: &Type) -> bool {
        *ty == Type::INTERVAL
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.months == 0 && self.days == 0 && self.microseconds == 0 {
            return f.write_str("PT0S");
        }
        f.write_str("P")?;
        let (years, months) = (self.months / 12, self.months % 12);
        if years != 0 {
            write!(f, "{years}Y")?;
        }
        if months != 0 {
            write!(f, "{months}M")?;
        }
        if self.days != 0 {
            write!(f, "{}D", self.days)?;
        }
        if self.microseconds != 0 {
            let us = self.microseconds;
            let hours = us / 3_600_000_000;
            let minutes = us % 3_600_000_000 / 60_000_000;
            let rest = us % 60_000_000; // seconds and fraction, same sign as `us`
            f.write_str("T")?;
            if hours != 0 {
                write!(f, "{hours}H")?;
            }
            if minutes != 0 {
                write!(f, "{minutes}M")?;
            }
            if rest != 0 {
                let sign = if rest < 0 { "-" } else { "" };
                let rest = rest.unsigned_abs();
                let (secs, frac) = (rest / 1_000_000, rest % 1_000_000);
                if frac == 0 {
                    write!(f, "{sign}{secs}S")?;
                } else {
                    let frac = format!("{frac:06}");
                    write!(f, "{sign}{secs}.{}S", frac.trim_end_matches('0'))?;
                }
            }
        }
        Ok(())
    }
}

impl Serialize for Interval {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::Interval;

    fn iso(months: i32, days: i32, microseconds: i64) -> String {
        Interval {
            months,
            days,
            microseconds,
        }
        .to_string()
    }

    #[test]
    fn formats_like_postgres_iso_8601() {
        assert_eq!(iso(0, 0, 0), "PT0S");
        assert_eq!(iso(0, 1, 3_661_500_000), "P1DT1H1M1.5S");
        assert_eq!(iso(14, 3, 0), "P1Y2M3D");
        assert_eq!(iso(-14, 3, -14_706_000_000), "P-1Y-2M3DT-4H-5M-6S");
        assert_eq!(iso(0, 0, -500_000), "PT-0.5S");
        assert_eq!(iso(0, 0, 60_000_000), "PT1M");
        assert_eq!(iso(0, 0, 1), "PT0.000001S");
    }
}
