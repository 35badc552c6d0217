package stage

const sysSeccomp = 277
