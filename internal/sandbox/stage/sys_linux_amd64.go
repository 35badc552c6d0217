package stage

const sysSeccomp = 317
