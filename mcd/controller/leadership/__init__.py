"""Who paces a pool: the one controller that may write it. ``election`` finds the install
namespace the Lease lives in and keeps mcd's controller off a cluster where upstream's
machine-config-controller runs; ``pacer`` records the Lease that paces each pool on the pool
and refuses every write to a pool another Lease paces."""
