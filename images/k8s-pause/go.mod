module brig.local/k8s-pause

go 1.22
