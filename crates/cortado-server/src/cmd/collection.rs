//! What the commands of every collection type (lists, sorted sets) share: changing one in
//! place and deleting its key once it is empty, as Redis deletes an emptied collection.

use super::wrong_type;
use crate::keyspace::list::List;
use crate::keyspace::zset::ZSet;
use crate::keyspace::{Shard, Value};
use crate::protocol::ErrorReply;

/// A collection type of [`Value`].
pub(crate) trait Collection {
    /// The collection `value` holds, if it is of this type.
    fn of_mut(value: &mut Value) -> Option<&mut Self>;
    /// Whether it is empty (and its key must go).
    fn is_empty(&self) -> bool;
}

impl Collection for ZSet {
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        value.as_zset_mut()
    }

    fn is_empty(&self) -> bool {
        ZSet::is_empty(self)
    }
}

impl Collection for List {
    fn of_mut(value: &mut Value) -> Option<&mut Self> {
        value.as_list_mut()
    }

    fn is_empty(&self) -> bool {
        List::is_empty(self)
    }
}

/// Runs `change` on the collection at `key` in `db`, if there is one (`WRONGTYPE` if the key
/// holds another type), and deletes the key if that emptied it: the result, and whether the
/// key went. The caller tells its event, then `del` if the key went (Redis's order). The
/// value is re-weighed when the borrow ends (the library's `RefMut`).
pub(crate) fn change<C: Collection, R>(
    shard: &mut Shard,
    db: usize,
    key: &[u8],
    change: impl FnOnce(&mut C) -> Result<R, ErrorReply>,
) -> Result<Option<(R, bool)>, ErrorReply> {
    let Some(mut value) = shard.lookup_mut(db, key) else {
        return Ok(None);
    };
    let collection = C::of_mut(&mut value).ok_or_else(wrong_type)?;
    let result = change(collection);
    let emptied = collection.is_empty();
    drop(value);
    if emptied {
        shard.remove(db, key);
    }
    Ok(Some((result?, emptied)))
}
