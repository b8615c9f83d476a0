"""MachineConfigs generated from KubeletConfig and ContainerRuntimeConfig objects (pure).

Upstream's kubelet-config and container-runtime-config controllers, for plain Kubernetes: the
checks of each object, the files it becomes on a node (drop-ins the kubelet and the container
runtime read), the ``99-<pool>-generated-<kind>[-N]`` names and the object's status conditions.
"""
