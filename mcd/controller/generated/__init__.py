"""KubeletConfig and ContainerRuntimeConfig turned into MachineConfigs by ``mcd controller``.

Upstream's kubelet-config and container-runtime-config controllers: each object becomes
``99-<pool>-generated-kubelet`` (or ``-containerruntime``, suffixed ``-1`` ... ``-9`` for later
objects) for every pool it selects, with upstream's status conditions on the object, its
finalizers, and the generated MachineConfig deleted with it. The render then picks the
generated MachineConfig up like any other (:mod:`mcd.controller.rendering`).
"""
