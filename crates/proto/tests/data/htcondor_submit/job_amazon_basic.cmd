universe = grid
grid_resource = amazon
executable = amazon_basic
amazon_ami_id = ami-basic
#amazon_keypair_file = job_amazon_basic.ssh_keys
amazon_public_key = job_amazon_basic.pub
amazon_private_key = job_amazon_basic.priv
log = job_amazon_basic.log
notification = NEVER
queue
